"""The core's masking rules (``robust_queue.masking``): secret names read
as words, secret values known by their shape, free text, settings (no
database)."""

from __future__ import annotations

import re

from django.core.checks import run_checks
from django.test import SimpleTestCase, override_settings

from robust_queue import masking
from robust_queue.exceptions import ConfigurationError
from robust_queue.masking import MASK, mask
from robust_queue.masking.names import name_matches, words
from robust_queue.masking.text import mask_text

DEFAULT = masking.DEFAULT_NAMES

# One of each kind of secret the built-in shapes know, and how each shows.
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
SHAPES = {
    f"charge with {STRIPE} now": f"charge with {MASK} now",
    "restricted rk_test_51HkYx2Lz9aBcDeFgH key": f"restricted {MASK} key",
    "aws AKIAIOSFODNN7EXAMPLE, region": f"aws {MASK}, region",
    "gh ghp_16C7e42F292c6912E7710c838347Ae178B4a ok": f"gh {MASK} ok",
    "slack xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy": f"slack {MASK}",
    "sent Bearer abc.DEF-123_~+/xyz0= to the API": f"sent Bearer {MASK} to the API",
    "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk x": (
        f"jwt {MASK} x"
    ),
    "postgres://app:pa55w0rd@db:5432/shop": f"postgres://app:{MASK}@db:5432/shop",
    "hook whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw end": f"hook {MASK} end",
    "gitlab glpat-xYz12AbC34dEf56GhI78jK end": f"gitlab {MASK} end",
    "google AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe end": f"google {MASK} end",
    "sent BEARER abcdefghijklmnop0123 away": f"sent BEARER {MASK} away",
    "key '-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA\\n-----END RSA PRIVATE KEY-----' end": (
        f"key '{MASK}' end"
    ),
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n": (
        f"{MASK}\n"
    ),
}


class NameWordTests(SimpleTestCase):
    """A plain pattern matches whole words of a name, in any spelling."""

    def test_names_are_read_as_words(self) -> None:
        self.assertEqual(words("XApiKey"), ["x", "api", "key"])
        self.assertEqual(words("aws_secret_ACCESS_key"), ["aws", "secret", "access", "key"])
        self.assertEqual(words("HTTP_AUTHORIZATION"), ["http", "authorization"])
        self.assertEqual(words("password2"), ["password", "2"])

    def test_secret_names_in_every_spelling_match(self) -> None:
        for name in (
            "token",
            "api_TOKEN",
            "X-Token",
            "accessToken",
            "refresh_tokens",
            "api_key",
            "apiKey",
            "APIKey",
            "x-api-key",
            "apikey",
            "SECRET_KEY",
            "client_secret",
            "db_password",
            "Authorization",
            "session_cookie",
            "card_number",
            "sessionid",
        ):
            with self.subTest(name=name):
                self.assertIs(name_matches(name, DEFAULT), True)

    def test_harmless_names_do_not_match(self) -> None:
        for name in ("key", "cache_key", "monkey", "keyboard", "tokenizer", "discard", "user"):
            with self.subTest(name=name):
                self.assertIs(name_matches(name, DEFAULT), False)

    def test_a_glob_matches_the_whole_name(self) -> None:
        self.assertIs(name_matches("db_pass", ["db_*"]), True)
        self.assertIs(name_matches("old_db_pass", ["db_*"]), False)
        self.assertIs(name_matches("PIN1", ["pin?"]), True)
        self.assertIs(name_matches("pin", ["pin[0-9]"]), False)

    def test_a_compiled_pattern_searches_with_its_own_flags(self) -> None:
        self.assertIs(name_matches("user_ssn", [re.compile(r"ssn$")]), True)
        self.assertIs(name_matches("USER_SSN", [re.compile(r"ssn$")]), False)
        self.assertIs(name_matches("USER_SSN", [re.compile(r"ssn$", re.I)]), True)

    def test_no_pattern_matches_nothing_and_an_empty_one_everything(self) -> None:
        self.assertIs(name_matches("password", []), False)
        self.assertIs(name_matches("user", [""]), True)


class ShapeTests(SimpleTestCase):
    def test_every_built_in_shape_is_masked_whatever_its_name(self) -> None:
        for text, expected in SHAPES.items():
            with self.subTest(text=text):
                self.assertEqual(mask(text), expected)

    def test_every_shape_in_one_text_is_masked(self) -> None:
        """Each shape scans only a text holding what its matches contain
        (a hint, lower-cased): one text with every kind of secret, each
        on a line of a long traceback, loses them all."""
        noise = 'File "/srv/app/billing/gateway.py", line 12, in charge\n' * 40
        text = "".join(f"{noise}{line}\n" for line in SHAPES)
        expected = "".join(f"{noise}{shown}\n" for shown in SHAPES.values())
        self.assertEqual(mask(text), expected)

    def test_prose_about_keys_is_not_masked(self) -> None:
        text = "use an sk_live_ key, not AKIA; Bearer tokens expire; eyJ is base64"
        self.assertEqual(mask(text), text)

    def test_masking_twice_changes_nothing_more(self) -> None:
        for text in SHAPES:
            with self.subTest(text=text):
                self.assertEqual(mask(mask(text)), mask(text))


class MaskTests(SimpleTestCase):
    """``mask`` is the one function: text, and values of any shape."""

    def test_structures_hide_secret_names_and_mask_every_string(self) -> None:
        value = {
            "key": "user:42",
            "token": "abc",
            "note": f"paid with {STRIPE}",
            "rows": [{"password": 1}, "token=hunter22", 7, None],
            "pair": ("x", STRIPE),
        }
        self.assertEqual(
            mask(value),
            {
                "key": "user:42",
                "token": MASK,
                "note": f"paid with {MASK}",
                "rows": [{"password": MASK}, f"token={MASK}", 7, None],
                "pair": ("x", MASK),
            },
        )

    @override_settings(ROBUST_QUEUE={"admin_mask": []})
    def test_masking_off_shows_everything(self) -> None:
        self.assertEqual(mask({"token": STRIPE}), {"token": STRIPE})

    @override_settings(ROBUST_QUEUE={"mask_names": ["order_ref", "pin?"]})
    def test_more_names_from_settings(self) -> None:
        self.assertEqual(
            mask({"orderRef": 1, "pin1": 2, "password": 3, "pin": 4}),
            {"orderRef": MASK, "pin1": MASK, "password": MASK, "pin": 4},
        )

    @override_settings(ROBUST_QUEUE={"mask_values": [r"\bacme_[0-9a-f]{8}\b"]})
    def test_more_shapes_from_settings(self) -> None:
        self.assertEqual(mask("key acme_0badf00d and sk"), f"key {MASK} and sk")
        self.assertEqual(mask(STRIPE), MASK)

    @override_settings(ROBUST_QUEUE={"admin_mask": None, "mask_values": [r"acme_\w+"]})
    def test_settings_extras_apply_with_the_built_in_rules_off(self) -> None:
        self.assertEqual(mask(f"acme_1 {STRIPE}"), f"{MASK} {STRIPE}")

    @override_settings(ROBUST_QUEUE={"mask_values": ["sk_[", "ok"]})
    def test_a_bad_regex_is_a_clear_error(self) -> None:
        message = (
            "ROBUST_QUEUE[\"mask_values\"] must be a list of regular expressions; 'sk_[' is "
            "not one (unterminated character set at position 3), not ['sk_[', 'ok']."
        )
        with self.assertRaisesMessage(ConfigurationError, message):
            mask("x")
        self.assertIn(message, [error.msg for error in run_checks()])

    @override_settings(ROBUST_QUEUE={"mask_values": ["a*"], "mask_names": [3]})
    def test_a_regex_matching_nothing_and_a_bad_name_are_refused(self) -> None:
        messages = [error.msg for error in run_checks()]
        self.assertIn(
            "ROBUST_QUEUE[\"mask_values\"] must be a list of regular expressions; 'a*' "
            "matches the empty string, not ['a*'].",
            messages,
        )
        self.assertIn(
            'ROBUST_QUEUE["mask_names"] must be a list of non-empty names (words or globs) '
            "or compiled regular expressions, not [3].",
            messages,
        )


class MaskTextTests(SimpleTestCase):
    def mask(self, text: str, *secrets: str) -> str:
        return mask_text(text, DEFAULT, (), secrets)

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

    def test_a_long_word_is_read_once_not_once_per_letter(self) -> None:
        """A 10 MB message of one word took minutes (each letter tried as a
        name's start); a flag's dashes still precede a name."""
        long = "m" * 2_000_000
        self.assertEqual(self.mask(f"{long} password=hunter22"), f"{long} password={MASK}")
        self.assertEqual(self.mask("--password=hunter22 -v"), f"--password={MASK} -v")

    def test_names_that_match_no_pattern_keep_their_values(self) -> None:
        text = "user=bob queue=mail attempts: 3 key=user:42"
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

    def test_without_names_only_known_values_are_masked(self) -> None:
        text = "password=hunter22 and the value abcdef"
        self.assertEqual(
            mask_text(text, [], (), ["abcdef"]), f"password=hunter22 and the value {MASK}"
        )
