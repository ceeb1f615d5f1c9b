"""Storage settings for the churning queue tables: measured, none needed.

Reserved for per-table autovacuum settings on PostgreSQL (issue 25,
section 7). Measured with ``bench.soak --backlog 100000 --table-options
autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=500,
autovacuum_vacuum_cost_delay=0`` against the server's defaults: the ready
table kept ~150 dead rows instead of ~3,900, and the claim read the same
pages (p95 11-15 either way). A dead row that no transaction can see any
more costs the claim nothing once an index scan has marked its entry dead;
what costs is a dead row an open transaction still holds, and vacuum
cannot remove those whatever its settings. See BENCHMARKS.md, "Soak".
The migration stays empty so that the graph keeps its shape.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("robust_queue", "0021_statistic_released")]

    operations = []
