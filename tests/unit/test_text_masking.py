"""Secrets in free text (tracebacks, error messages, concurrency keys) are
masked by name and by value (no database)."""

from __future__ import annotations

import re

from django.test import SimpleTestCase

from robust_queue.admin.masking.text_masking import MASK, mask_text, name_matches

DEFAULT = ("password", "secret", "token", "key", "authorization", "cookie", "card")


class NameMatchTests(SimpleTestCase):
    def test_a_plain_pattern_matches_as_a_substring_ignoring_case(self) -> None:
        self.assertIs(name_matches("api_TOKEN", ["token"]), True)
        self.assertIs(name_matches("X-Token", ["token"]), True)
        self.assertIs(name_matches("tok", ["token"]), False)

    def test_a_glob_matches_the_whole_name(self) -> None:
        self.assertIs(name_matches("db_pass", ["db_*"]), True)
        self.assertIs(name_matches("old_db_pass", ["db_*"]), False)
        self.assertIs(name_matches("PIN1", ["pin?"]), True)
        self.assertIs(name_matches("pin", ["pin[0-9]"]), False)

    def test_a_compiled_pattern_searches_with_its_own_flags(self) -> None:
        self.assertIs(name_matches("user_ssn", [re.compile(r"ssn$")]), True)
        self.assertIs(name_matches("USER_SSN", [re.compile(r"ssn$")]), False)
        self.assertIs(name_matches("USER_SSN", [re.compile(r"ssn$", re.I)]), True)

    def test_no_pattern_matches_nothing(self) -> None:
        self.assertIs(name_matches("password", []), False)


class MaskTextTests(SimpleTestCase):
    def mask(self, text: str, *secrets: str) -> str:
        return mask_text(text, DEFAULT, secrets)

    def test_name_value_pairs_in_their_usual_shapes(self) -> None:
        cases = {
            "login failed: password=hunter22 user=bob": f"login failed: password={MASK} user=bob",
            "api_token: abc123, retry": f"api_token: {MASK}, retry",
            "{'secret': 's3cr3t', 'n': 1}": f"{{'secret': {MASK}, 'n': 1}}",
            '{"Card": "4111 1111", "id": 7}': f'{{"Card": {MASK}, "id": 7}}',
            "Authorization: Bearer eyJhbGciOi": f"Authorization: {MASK}",
        }
        for text, expected in cases.items():
            with self.subTest(text=text):
                self.assertEqual(self.mask(text), expected)

    def test_a_password_in_a_url(self) -> None:
        self.assertEqual(
            self.mask("could not connect to postgres://app:pa55w0rd@db:5432/shop"),
            f"could not connect to postgres://app:{MASK}@db:5432/shop",
        )

    def test_names_that_match_no_pattern_keep_their_values(self) -> None:
        text = "user=bob queue=mail attempts: 3"
        self.assertEqual(self.mask(text), text)

    def test_an_exception_and_its_message_are_not_a_pair(self) -> None:
        text = "KeyError: 'token'"
        self.assertEqual(self.mask(text), text)

    def test_a_pair_inside_the_value_of_another_is_found(self) -> None:
        self.assertEqual(self.mask("note=token=abcd"), f"note=token={MASK}")

    def test_known_secret_values_are_masked_wherever_they_appear(self) -> None:
        text = "sent s3cr3t-value to bob; s3cr3t-value-2 too"
        self.assertEqual(
            self.mask(text, "s3cr3t-value", "s3cr3t-value-2"),
            f"sent {MASK} to bob; {MASK} too",
        )

    def test_short_values_are_not_hunted_for(self) -> None:
        """Masking "ok" would hide half a traceback and protect nothing."""
        self.assertEqual(self.mask("ok: the job is ok", "ok"), "ok: the job is ok")

    def test_without_patterns_only_known_values_are_masked(self) -> None:
        text = "password=hunter22 and the value abcdef"
        self.assertEqual(mask_text(text, [], ["abcdef"]), f"password=hunter22 and the value {MASK}")
