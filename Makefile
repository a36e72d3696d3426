# Two entry points: `make app` runs the dashboard, `make test` runs the tests.
# Both create .venv and install requirements.txt when needed; `make test` (and `make train`,
# which prepares training) also install the training extra, requirements-train.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TRAIN_STAMP := $(VENV)/.installed-train
HOST ?= 127.0.0.1
PORT ?= 8501
# Test processes (pytest-xdist); each test file runs in one of them (0: all in this one).
TEST_WORKERS ?= 2
# llama-cpp-python compiles llama.cpp from source.  A portable x86-64 CPU build (AVX2, no
# AMX): llama.cpp's AMX kernels, chosen by a native build on recent Xeons, crash on some
# virtual machines.  Set LLAMA_CMAKE_ARGS for a GPU build (e.g. -DGGML_CUDA=ON).
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON

.PHONY: app test venv train clean

$(STAMP): requirements.txt requirements-nodeps.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet --no-cache-dir \
		"$$(grep '^llama-cpp-python==' requirements.txt)"
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $(STAMP)

$(TRAIN_STAMP): $(STAMP) requirements-train.txt
	$(PY) -m pip install --quiet -r requirements-train.txt
	touch $(TRAIN_STAMP)

venv: $(STAMP)

train: $(TRAIN_STAMP)
	@echo "The training extra is installed: see docs/training.md (python -m dcem_clinical train, python -m sag train)."

app: $(STAMP)
	$(PY) -m studio.serve --server.address $(HOST) --server.port $(PORT)

test: $(STAMP) $(TRAIN_STAMP)
	./scripts/ensure-chromium
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

clean:
	rm -rf $(VENV) .pytest_cache
