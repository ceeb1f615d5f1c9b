"""The overview: queues, throughput charts, task pages and task pauses."""
