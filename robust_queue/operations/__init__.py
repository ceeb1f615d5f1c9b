"""The read model and the verbs that the admin, the commands and the
metrics share: known queues and who serves them, capped counts, bulk
retry / run now / discard / cancel, status and health.

Nothing here renders HTML or imports ``robust_queue.admin``: a project
without ``django.contrib.admin`` runs every command.
"""
