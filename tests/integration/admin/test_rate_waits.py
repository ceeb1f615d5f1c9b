"""The admin shows jobs over their rate limit as such: "rate limited:
<key> (N per <window>)" and when the key's next window opens, in the
blocked list and on the job page (linked to the jobs waiting on the same
key), and under "Rate limits" on the concurrency page; keys masked like
their jobs' arguments."""

from __future__ import annotations

from django.test import override_settings
from django.urls import reverse

from robust_queue.models import Job, RateLimit
from testproject import coordination_tasks as co
from tests.integration.admin.base import AdminTestCase, changelist, job_url

KEY = "testproject.coordination_tasks.rated/acme"
SECRET = "s3cret-account"


def enqueue_over_the_rate(account: str, count: int = 3) -> list[Job]:
    """``count`` jobs of ``account``: the first two start, the rest wait."""
    ids = [co.rated.enqueue(account=account, n=n).id for n in range(count)]
    return [Job.objects.get(result_id=result_id) for result_id in ids]


class RateWaitTests(AdminTestCase):
    def setUp(self) -> None:
        self.login(self.viewer)
        self.jobs = enqueue_over_the_rate("acme", 4)
        self.waiting = self.jobs[2:]
        self.other = enqueue_over_the_rate("other")[2]

    def _listed(self, **params: str) -> list[int]:
        response = self.client.get(changelist(**params))
        self.assertEqual(response.status_code, 200)
        return sorted(job.pk for job in response.context["cl"].result_list)

    def test_the_blocked_list_says_rate_limited_with_the_key_rate_and_next_window(self) -> None:
        response = self.client.get(changelist(state="blocked"))
        self.assertContains(response, f"rate limited: {KEY} (2 per 1 h)")
        opens = RateLimit.objects.get(key=KEY).next_release
        assert opens is not None
        # When the hour's window ends: relative, the exact time in a tooltip.
        self.assertContains(response, f'next window <time datetime="{opens.isoformat()}"')
        self.assertContains(response, ">in ")
        self.assertNotContains(response, f">rate:{KEY}<")

    def test_the_job_page_shows_the_rate_wait_linked_to_the_jobs_of_its_key(self) -> None:
        response = self.client.get(job_url("change", self.waiting[0].pk))
        self.assertContains(response, 'id="rq-rate-wait"')
        self.assertContains(response, f"rate limited: {KEY} (2 per 1 h)")
        url = changelist(state="blocked", rate_key_of=str(self.waiting[0].pk))
        self.assertContains(response, f'href="{url.replace("&", "&amp;")}"')
        self.assertContains(response, "next window")
        self.assertContains(response, "Waiting on its rate limit")
        self.assertNotContains(response, "Blocked on concurrency key")

    def test_the_rate_key_filter_lists_the_jobs_waiting_on_that_key_only(self) -> None:
        listed = self._listed(state="blocked", rate_key_of=str(self.waiting[0].pk))
        self.assertEqual(listed, sorted(job.pk for job in self.waiting))
        self.assertEqual(self._listed(state="blocked", rate_key_of=str(self.blocked.pk)), [])
        self.assertEqual(self._listed(state="blocked", rate_key_of="nope"), [])

    def test_a_job_admitted_by_its_rate_shows_no_rate_wait(self) -> None:
        response = self.client.get(job_url("change", self.jobs[0].pk))
        self.assertNotContains(response, "rq-rate-wait")

    def test_a_rate_key_with_no_rate_row_shows_without_a_next_window(self) -> None:
        RateLimit.objects.all().delete()
        response = self.client.get(changelist(state="blocked"))
        self.assertContains(response, f"rate limited: {KEY} (2 per 1 h)")
        self.assertNotContains(response, "next window")
        page = self.client.get(job_url("change", self.waiting[0].pk))
        self.assertContains(page, f"rate limited: {KEY} (2 per 1 h)")
        self.assertNotContains(page, "next window")
        concurrency = self.client.get(reverse("admin:robust_queue_concurrency"))
        self.assertEqual(concurrency.status_code, 200)

    def test_the_concurrency_page_lists_rate_keys_under_rate_limits(self) -> None:
        response = self.client.get(reverse("admin:robust_queue_concurrency"))
        rated = [row["shown_key"] for row in response.context["rate_keys"]]
        self.assertEqual(sorted(rated), sorted([KEY, "testproject.coordination_tasks.rated/other"]))
        others = [row["concurrency_key"] for row in response.context["blocked_keys"]]
        self.assertEqual(others, ["key-1"])
        self.assertContains(response, "<caption>Rate limits</caption>", html=True)
        first = min(job.pk for job in self.waiting)
        self.assertContains(response, f"rate_key_of={first}")

    @override_settings(ROBUST_QUEUE={"admin_mask": ["account"]})
    def test_rate_keys_built_from_masked_arguments_are_masked(self) -> None:
        secret = enqueue_over_the_rate(SECRET)[2]
        pages = [
            self.client.get(changelist(state="blocked")),
            self.client.get(job_url("change", secret.pk)),
            self.client.get(reverse("admin:robust_queue_concurrency")),
        ]
        for response in pages:
            self.assertEqual(response.status_code, 200)
            self.assertNotContains(response, SECRET)
            self.assertContains(response, "rate limited" if response is not pages[2] else "Rate")
        self.assertContains(pages[1], "rate limited: testproject.coordination_tasks.rated/")
        shown = [row["shown_key"] for row in pages[2].context["rate_keys"]]
        self.assertEqual(len(shown), 3)
        for key in shown:
            self.assertTrue(key.startswith("testproject.coordination_tasks.rated/"), key)
