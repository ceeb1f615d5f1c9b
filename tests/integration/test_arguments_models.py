"""Model instances passed as task arguments are stored by pk and refetched."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import TestCase

from robust_queue.arguments import DeserializationError, decode_arguments, encode_arguments


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
