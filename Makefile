# Two entry points: `make app` runs the dashboard, `make test` runs the tests.
# Both create .venv and install requirements.txt when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: app test venv clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

app: $(STAMP)
	$(PY) -m studio.serve --server.address $(HOST) --server.port $(PORT)

test: $(STAMP)
	./scripts/ensure-chromium
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
