"""@encrypted: its forms and errors, sealing with rotated keys, the checks
(robust_queue.E025), and a project without it never loading cryptography."""

from __future__ import annotations

import subprocess
import sys
from unittest import mock

from cryptography.fernet import Fernet
from django.test import SimpleTestCase, override_settings

import robust_queue
from robust_queue.checks import check_settings
from robust_queue.exceptions import ConfigurationError, EncryptionError
from robust_queue.options import sealing
from robust_queue.options.encryption import ENCRYPTED, Encryption
from testproject import encrypted_tasks, tasks
from tests.processes.support import ROOT

from .test_task_options import build as declare

KEY = Fernet.generate_key().decode()
OTHER = Fernet.generate_key().decode()
MODULES = [encrypted_tasks.__name__]


def e025(**settings: object) -> list[str]:
    with override_settings(ROBUST_QUEUE=settings):
        return [m.msg for m in check_settings() if m.id == "robust_queue.E025"]


class DeclarationTests(SimpleTestCase):
    def test_every_form_declares_the_same_option(self) -> None:
        self.assertEqual(ENCRYPTED.of(encrypted_tasks.record_card), Encryption())
        self.assertEqual(ENCRYPTED.of(encrypted_tasks.lookup_secret), Encryption(result=True))
        self.assertEqual(ENCRYPTED.of(declare(encrypted=True)), Encryption())
        self.assertEqual(ENCRYPTED.of(declare(encrypted={"result": True})), Encryption(result=True))
        self.assertIsNone(ENCRYPTED.of(declare(encrypted=False)))
        self.assertIsNone(ENCRYPTED.of(tasks.add))
        copy = encrypted_tasks.lookup_secret.using(priority=5)
        self.assertEqual(ENCRYPTED.of(copy), Encryption(result=True))

    def test_bad_declarations_are_clear_errors(self) -> None:
        with self.assertRaisesMessage(ConfigurationError, "encrypted(): 'result' must be True"):
            robust_queue.encrypted(result=1)  # type: ignore[attr-defined]
        with self.assertRaisesMessage(ConfigurationError, "takes True or a dict of encrypted()"):
            declare(encrypted="yes")
        with self.assertRaisesMessage(ConfigurationError, "@encrypted must be stacked over @task"):
            robust_queue.encrypted(len)  # type: ignore[attr-defined]
        with self.assertRaisesMessage(TypeError, "takes a task or keyword options, not both"):
            robust_queue.encrypted(tasks.add, result=True)  # type: ignore[attr-defined]


class SealingTests(SimpleTestCase):
    def test_the_first_key_seals_and_every_key_opens(self) -> None:
        with override_settings(ROBUST_QUEUE={"encryption_keys": [KEY]}):
            old = sealing.seal({"args": ["plain-text"], "kwargs": {}}, "a value")
        self.assertIs(sealing.is_sealed(old), True)
        self.assertNotIn("plain-text", old["v"])
        with override_settings(ROBUST_QUEUE={"encryption_keys": [OTHER, KEY]}):
            self.assertEqual(sealing.unseal(old, "a value"), {"args": ["plain-text"], "kwargs": {}})
            new = sealing.seal([1.5, "é\udc80"], "a value")
        self.assertEqual(
            Fernet(OTHER.encode()).decrypt(new["v"].encode()), b'[1.5,"\\u00e9\\udc80"]'
        )
        with override_settings(ROBUST_QUEUE={"encryption_keys": [KEY]}):
            with self.assertRaisesMessage(EncryptionError, "Cannot decrypt a value with any of"):
                sealing.unseal(new, "a value")

    def test_an_altered_or_malformed_token_is_refused(self) -> None:
        with override_settings(ROBUST_QUEUE={"encryption_keys": [KEY]}):
            sealed = sealing.seal("secret", "v")
            altered = {**sealed, "v": sealed["v"][:-4] + "AAAA"}
            with self.assertRaisesMessage(EncryptionError, "or the value was altered"):
                sealing.unseal(altered, "v")
            with self.assertRaisesMessage(EncryptionError, "the stored value is not a token"):
                sealing.unseal({"__rq__": "encrypted", "v": 5}, "v")

    def test_key_problems_name_places_and_never_keys(self) -> None:
        self.assertEqual(sealing.key_problems([KEY, KEY.encode()]), [])
        self.assertEqual(
            sealing.key_problems([KEY, "short", None]),
            [
                f"{sealing.SETTING}[1] is not a Fernet key ({sealing.FERNET_KEY}).",
                f"{sealing.SETTING}[2] is not a Fernet key ({sealing.FERNET_KEY}).",
            ],
        )
        [problem] = sealing.key_problems(KEY)
        self.assertIn("must be a list of keys (newest first), not one string", problem)
        self.assertNotIn(KEY, problem)

    @override_settings(ROBUST_QUEUE={"encryption_keys": [KEY]})
    def test_without_cryptography_sealing_names_the_extra(self) -> None:
        sealing._multi_fernet.cache_clear()
        self.addCleanup(sealing._multi_fernet.cache_clear)
        with mock.patch.dict(sys.modules, {"cryptography.fernet": None}):
            with self.assertRaisesMessage(EncryptionError, "pip install 'robust-queue[encrypted]'"):
                sealing.seal("x", "v")


class CheckTests(SimpleTestCase):
    databases = {"default", "queue"}

    def test_no_keys_and_no_encrypted_task_is_quiet(self) -> None:
        self.assertEqual(e025(), [])
        self.assertEqual(e025(encryption_keys=[KEY], task_modules=MODULES), [])

    def test_encrypted_tasks_without_keys_are_named(self) -> None:
        [message] = e025(task_modules=MODULES)
        self.assertEqual(
            message,
            "testproject.encrypted_tasks.declared_by_keyword, "
            "testproject.encrypted_tasks.lookup_secret, "
            "testproject.encrypted_tasks.record_card are @encrypted but "
            'ROBUST_QUEUE["encryption_keys"] is empty: their jobs can be neither '
            "enqueued nor run.",
        )

    def test_a_bad_key_is_named_by_its_place(self) -> None:
        [message] = e025(encryption_keys=[KEY, "hunter2"])
        self.assertEqual(
            message,
            f'ROBUST_QUEUE["encryption_keys"][1] is not a Fernet key ({sealing.FERNET_KEY}).',
        )

    def test_keys_without_cryptography_are_an_error(self) -> None:
        with mock.patch("robust_queue.checks.find_spec", return_value=None):
            [message] = e025(encryption_keys=[KEY])
        self.assertEqual(
            message,
            "Encrypted tasks need the cryptography package, which is not installed: "
            "pip install 'robust-queue[encrypted]'.",
        )


class NoCostTests(SimpleTestCase):
    def test_a_project_without_encrypted_tasks_never_imports_cryptography(self) -> None:
        """Enqueue, run, results, admin and checks import no cryptography."""
        code = (
            "import sys, django; django.setup()\n"
            "import robust_queue.backend, robust_queue.running.performing, robust_queue.checks\n"
            "import robust_queue.admin, robust_queue.admin.masking.values\n"
            "from testproject import tasks\n"
            "print(sorted(m for m in sys.modules if m.startswith('cryptography')))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={"DJANGO_SETTINGS_MODULE": "testproject.settings", "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        self.assertEqual((done.returncode, done.stdout.strip()), (0, "[]"), done.stderr)
