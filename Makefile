# The README's commands.
.PHONY: demo test bench

demo:  ## set up a venv, migrate SQLite, run example tasks through the supervisor
	scripts/demo.sh

test:  ## the whole suite: Python 3.11/Django 5.2 and 3.12/Django 6.1 x SQLite, PostgreSQL, MariaDB
	scripts/test.sh

bench:  ## enqueue and drain benchmarks on PostgreSQL
	scripts/bench.sh
