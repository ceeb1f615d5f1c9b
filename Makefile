# The README's commands.
.PHONY: demo test docs bench

demo:  ## a venv with the package alone + the SQLite testproject: enqueue example tasks, run the supervisor, print results
	scripts/demo.sh

test:  ## the docs build, then the whole suite (three cells at a time; each database's process tier its own cell): 311/312 x SQLite, PostgreSQL, MariaDB; mypy; wheel + sdist
	scripts/test.sh

docs:  ## the documentation site (mkdocs.yml, docs/) built strictly into site/; any warning fails
	scripts/docs.sh

bench:  ## the benchmarks behind BENCHMARKS.md (enqueue, drain, backlog, soak, ...) on PostgreSQL, MariaDB and SQLite
	scripts/bench.sh
