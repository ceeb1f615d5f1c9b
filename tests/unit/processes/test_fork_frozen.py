"""``fork_frozen``: the child inherits a frozen heap and a running
collector; the parent's collector is left as it was (really forked)."""

from __future__ import annotations

import gc
import os
import weakref

from django.test import SimpleTestCase

from robust_queue.processes.children import fork_frozen


def fork_reporting_the_collector() -> tuple[int, int]:
    """Fork; the child exits with 1 if its collector runs, plus 2 if it
    inherited frozen objects. (child's code, frozen count here)."""
    pid = fork_frozen()
    if pid == 0:
        code = 0
        try:
            code = int(gc.isenabled()) + 2 * int(gc.get_freeze_count() > 0)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), gc.get_freeze_count()


class ForkFrozenTests(SimpleTestCase):
    def setUp(self) -> None:
        # This process's objects take part in its collections again.
        self.addCleanup(gc.unfreeze)

    def test_the_child_collects_and_leaves_the_inherited_objects_alone(self) -> None:
        code, frozen = fork_reporting_the_collector()
        self.assertEqual(code, 3)
        self.assertGreater(frozen, 0)
        self.assertTrue(gc.isenabled())

    def test_a_collector_turned_off_stays_off(self) -> None:
        gc.disable()
        self.addCleanup(gc.enable)
        code, _ = fork_reporting_the_collector()
        self.assertEqual(code, 2)
        self.assertFalse(gc.isenabled())

    def test_no_garbage_is_frozen(self) -> None:
        """A cycle nothing refers to is collected before the freeze, not
        kept for the life of the process."""
        node = Node()
        node.cycle = node
        gone = weakref.ref(node)
        del node
        fork_reporting_the_collector()
        self.assertIsNone(gone())


class Node:
    cycle: Node
