"""The overview and the pause URL with queue names outside the alphabet."""

from __future__ import annotations

from django.urls import reverse

from robust_queue.models import Pause
from tests.integration.admin.base import AdminTestCase


class QueueNamePageTests(AdminTestCase):
    def test_the_overview_renders_rows_of_names_no_task_may_use(self) -> None:
        """Rows written before the alphabet rule do not make it a 500."""
        for name in ("", "a/b", "mail bulk"):
            Pause.objects.create(queue_name=name)
        self.login()
        response = self.client.get(reverse("admin:robust_queue_overview"))
        self.assertContains(response, ">a/b</a>")
        self.assertContains(response, ">mail bulk</a>")

    def test_pausing_accepts_only_names_in_the_alphabet(self) -> None:
        """The posted name follows the queue-name rule; others are refused
        with a message and write nothing."""
        self.login()
        url = reverse("admin:robust_queue_queue", args=["pause"])
        for name in ("mail.bulk:v2", "a-b_c", "a b", "d\u00e9fault", ""):
            with self.subTest(name=name):
                self.assertEqual(self.client.post(url, {"queue": name}).status_code, 302)
        self.assertEqual(
            sorted(Pause.objects.values_list("queue_name", flat=True)),
            ["a-b_c", "mail.bulk:v2"],
        )
        kill = reverse("admin:robust_queue_queue", args=["kill"])
        self.assertEqual(self.client.post(kill, {"queue": "x"}).status_code, 404)
        self.assertEqual(Pause.objects.count(), 2)
