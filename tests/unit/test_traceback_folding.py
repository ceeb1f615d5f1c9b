"""The job page folds the queue's own frames of a traceback (issue 28 §4):
the application's frames stay in sight, nothing is lost (no database)."""

from __future__ import annotations

from django.test import SimpleTestCase

from robust_queue.admin.jobs.tracebacks import Part, parts

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/venv/lib/python3.12/site-packages/robust_queue/running/performing.py",'
    " line 150, in _perform_task\n"
    "    value = _run(claimed, task, result, guard)\n"
    "            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/srv/venv/lib/python3.12/site-packages/django/tasks/base.py", line 165, in call\n'
    "    return self.func(*args, **kwargs)\n"
    '  File "/srv/app/shop/tasks.py", line 12, in charge\n'
    "    gateway.charge(order)\n"
    '  File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run\n'
    "    return self._loop.run_until_complete(task)\n"
    '  File "/srv/app/shop/gateway.py", line 40, in charge\n'
    "    raise PaymentError(f'refused: token={MASK}')\n"
    "shop.gateway.PaymentError: refused: token=********\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/venv/lib/python3.12/site-packages/django_tasks/base.py", line 9, in run\n'
    "    x()\n"
    "ValueError: wrapped\n"
)


class FoldingTests(SimpleTestCase):
    def test_runs_of_queue_frames_fold_in_place(self) -> None:
        found = parts(TRACEBACK)
        self.assertEqual("".join(part.text for part in found), TRACEBACK)
        self.assertEqual([part.frames for part in found], [0, 2, 0, 1, 0, 1, 0])
        self.assertTrue(found[0].text.startswith("Traceback"))
        self.assertIn("performing.py", found[1].text)
        self.assertIn("^^^^", found[1].text)  # a frame's marks stay with it
        self.assertIn("shop/tasks.py", found[2].text)
        self.assertIn("asyncio/runners.py", found[3].text)
        self.assertTrue(found[4].text.startswith('  File "/srv/app/shop/gateway.py"'))
        self.assertIn("The above exception", found[4].text)
        self.assertEqual(found[6].text, "ValueError: wrapped\n")

    def test_a_traceback_without_queue_frames_is_one_part(self) -> None:
        text = 'Traceback (most recent call last):\n  File "/srv/app/x.py", line 1\nKeyError: 1\n'
        self.assertEqual(parts(text), [Part(text)])
        self.assertEqual(parts(""), [Part("")])
        self.assertEqual(parts("not a traceback"), [Part("not a traceback")])
