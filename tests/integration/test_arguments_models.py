"""Model instances passed as task arguments are stored by pk and refetched."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import TestCase, override_settings

from robust_queue.arguments import DeserializationError, decode_arguments, encode_arguments
from robust_queue.models import Job
from testproject import tasks
from testproject.models import LedgerEntry
from tests.helpers import work_off


def stored(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The arguments as a JSONField hands them back."""
    return json.loads(json.dumps(encode_arguments(args, kwargs)))  # type: ignore[no-any-return]


class ModelArgumentTests(TestCase):
    databases = "__all__"

    def test_instance_round_trips_as_a_fresh_copy(self) -> None:
        """Decoding fetches the row again: equal instance, current field values."""
        user = User.objects.create_user("ada")
        data = stored(user, owner=user)
        User.objects.filter(pk=user.pk).update(first_name="Ada")
        with self.assertNumQueries(2):
            args, kwargs = decode_arguments(data)
        self.assertEqual(args, [user])
        self.assertEqual(kwargs, {"owner": user})
        self.assertIsNot(args[0], user)
        self.assertEqual(args[0].first_name, "Ada")

    def test_instances_inside_containers_are_fetched(self) -> None:
        """References nested in lists and dicts are fetched too."""
        ada, bob = User.objects.create_user("ada"), User.objects.create_user("bob")
        _, kwargs = decode_arguments(stored(team={"lead": ada, "members": (ada, bob)}))
        self.assertEqual(kwargs["team"], {"lead": ada, "members": [ada, bob]})

    def test_missing_row_is_a_deserialization_error(self) -> None:
        """A deleted row names its model and pk, chained from DoesNotExist."""
        user = User.objects.create_user("gone")
        pk = user.pk
        data = stored(user)
        user.delete()
        message = f"auth.User with pk {pk!r} no longer exists."
        with self.assertRaisesMessage(DeserializationError, message) as caught:
            decode_arguments(data)
        self.assertIsInstance(caught.exception.__cause__, User.DoesNotExist)

    def test_unsaved_instance_cannot_be_encoded(self) -> None:
        """An instance with pk None is a TypeError naming the argument."""
        with self.assertRaisesMessage(TypeError, "Argument kwargs['user'] is an unsaved User"):
            encode_arguments([], {"user": User(username="draft")})

    def test_without_fetching_the_reference_is_returned_unqueried(self) -> None:
        """fetch_models=False yields the stored dict, even for a deleted row."""
        user = User.objects.create_user("shown")
        reference = {"model": "auth.user", "pk": user.pk}
        data = stored(user)
        user.delete()
        with self.assertNumQueries(0):
            args, _ = decode_arguments(data, fetch_models=False)
        self.assertEqual(args, [{"__rq__": "model", "v": reference}])

    def test_using_selects_the_database(self) -> None:
        """The row is read from the alias given, not from the routed default."""
        user = User.objects.db_manager("queue").create_user("elsewhere")
        data = stored(user)
        with self.assertNumQueries(1, using="queue"):
            [fetched], _ = decode_arguments(data, using="queue")
        self.assertEqual(fetched.username, "elsewhere")
        self.assertEqual(fetched._state.db, "queue")
        self.assertIs(User.objects.using("default").filter(pk=user.pk).exists(), False)
        with self.assertRaisesMessage(DeserializationError, "no longer exists"):
            decode_arguments(data, using="default")

    def test_uninstalled_model_is_a_deserialization_error(self) -> None:
        """A reference to a model that is no longer installed cannot be rebuilt."""
        data = {"args": [{"__rq__": "model", "v": {"model": "gone.thing", "pk": 1}}]}
        with self.assertRaisesMessage(DeserializationError, "gone.thing"):
            decode_arguments(data)


def reference(**payload: Any) -> dict[str, Any]:
    return {"args": [{"__rq__": "model", "v": payload}], "kwargs": {}}


class ForgedReferenceTests(TestCase):
    """A reference the encoding side could not have written loads nothing."""

    def test_forged_references_are_refused_without_a_query(self) -> None:
        user = User.objects.create_user("target")
        nested = {"__rq__": "model", "v": {"model": "auth.user", "pk": user.pk}}
        cases = {
            "extra key": reference(model="auth.user", pk=user.pk, using="other"),
            "label not as written": reference(model="auth.User", pk=user.pk),
            "label not a str": reference(model=["auth", "user"], pk=user.pk),
            "no pk": reference(model="auth.user"),
            "nested reference as pk": reference(model="auth.user", pk=nested),
            "dict as pk": reference(model="auth.user", pk={"pk__gt": 0}),
            "list as pk of a one-field key": reference(model="auth.user", pk=[user.pk]),
        }
        for name, data in cases.items():
            with (
                self.subTest(name),
                self.assertNumQueries(0),
                self.assertRaises(DeserializationError),
            ):
                decode_arguments(data)

    def test_a_pk_of_the_wrong_type_is_a_deserialization_error(self) -> None:
        with self.assertRaisesMessage(DeserializationError, "Malformed 'model' argument"):
            decode_arguments(reference(model="auth.user", pk="not-a-number"))


@override_settings(ROBUST_QUEUE={"argument_models": ["testproject.LedgerEntry"]})
class ArgumentModelsSettingTests(TestCase):
    """ROBUST_QUEUE["argument_models"] limits which models may be referenced."""

    def test_a_listed_model_round_trips(self) -> None:
        entry = LedgerEntry.objects.create(key="listed")
        [fetched], _ = decode_arguments(stored(entry))
        self.assertEqual(fetched, entry)

    def test_an_unlisted_model_is_refused_at_enqueue(self) -> None:
        user = User.objects.create_user("unlisted")
        message = (
            "Argument args[0] is a auth.User, which ROBUST_QUEUE['argument_models'] "
            "does not list; add 'auth.user' to it or pass the pk."
        )
        with self.assertRaisesMessage(TypeError, message):
            tasks.echo.enqueue(user)
        self.assertFalse(Job.objects.exists())

    def test_a_forged_reference_to_an_unlisted_model_loads_nothing(self) -> None:
        """The job fails; the task never receives the row."""
        user = User.objects.create_user("secret")
        result = tasks.echo.enqueue(1)
        Job.objects.filter(result_id=result.id).update(
            arguments=reference(model="auth.user", pk=user.pk)
        )
        work_off()
        job = Job.objects.get(result_id=result.id)
        [error] = job.errors
        self.assertEqual(
            error["exception_class_path"], "robust_queue.exceptions.DeserializationError"
        )
        self.assertIn("'auth.user' is not in ROBUST_QUEUE['argument_models']", error["traceback"])
        self.assertIsNone(job.return_value)
