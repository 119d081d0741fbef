# The two commands of the README are `make run` and `make test`.
.PHONY: run test demo events build image compose-build compose-config compose-secrets bench soak faults model

run: ## run everything locally: PostgreSQL, Temporal dev server with UI, migrations, demo accounts, API and worker, the PSP and DICT simulators
	./scripts/run.sh

test: ## every check and test, as CI runs them
	./scripts/test.sh

demo: ## replay the demo scenario against a running `make run`
	./scripts/demo.sh

events: ## print the service's events as they reach the broker (pixctl events tail)
	go run ./cmd/pixctl events tail

# GOFLAGS' build tags: scripts/lib.sh's GO_TAGS (gin without MessagePack),
# added once: not again to a GOFLAGS that has them (lib.sh does the same).
export GOFLAGS := $(strip $(if $(filter -tags=nomsgpack,$(GOFLAGS)),,-tags=nomsgpack) $(GOFLAGS))

build:
	go build -buildvcs=auto -o .bin/pixd ./cmd/pixd
	go build -buildvcs=auto -o .bin/pixctl ./cmd/pixctl
	go build -buildvcs=auto -o .bin/pspsim ./cmd/pspsim
	go build -buildvcs=auto -o .bin/dictsim ./cmd/dictsim

# The build's identity from git (docs/cli.md, "Build identity"), for the
# targets that build images; each is kept when set, so a release names its
# own: make image PIX_VERSION=v1.4.0. The Dockerfile's SOURCE stays its
# default unless PIX_SOURCE is set.
image compose-build: export PIX_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
image compose-build: export PIX_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
image compose-build: export PIX_CREATED ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)

image: ## the production image, named by git: pix:<git describe> (labels, pixd version, the workers' build id)
	docker build --build-arg VERSION="$$PIX_VERSION" --build-arg REVISION="$$PIX_REVISION" \
		--build-arg CREATED="$$PIX_CREATED" $${PIX_SOURCE:+--build-arg SOURCE="$$PIX_SOURCE"} \
		-t "pix:$${PIX_VERSION:-devel}" .

compose-build: ## docker-compose.yml's images (pixd, pspsim), named by git like `make image`: then `docker compose up`
	docker compose build

compose-secrets: ## the random secrets docker-compose.yml reads (deploy/secrets, ignored by git; made once, kept after): run before the first `docker compose up`
	./scripts/compose-secrets.sh

compose-config: ## validate docker-compose.yml, the Prometheus rules and the Dockerfile (make test does too)
	@bash -c 'source scripts/lib.sh && build_pinned staticcheck tools/lint/go.mod honnef.co/go/tools/cmd/staticcheck && check_deploy_files'

bench: ## load, ceilings and the targets on the dev server and a Temporal with PostgreSQL persistence, 1+1 and 2+2 processes; BENCH_HISTORY=10000000 adds the growth figures (empty tables beside 10M PIX of history; BENCH_ONLY=growth for them alone) (docs/benchmarks.md)
	./scripts/bench.sh

soak: ## 100,000 webhooks (BENCH_SOAK) through the whole pipeline on the PostgreSQL-backed Temporal: the books, the duration, the resources (docs/benchmarks.md)
	BENCH_SOAK=$${BENCH_SOAK:-100000} ./scripts/bench.sh

faults: ## the fault suite under load (docs/faults.md), then the long model-based histories (10,000 operations)
	./scripts/faults.sh
	./scripts/model.sh

model: ## the model-based random histories alone (PIX_MODEL_SEED, PIX_MODEL_OPS), then blocks and a MED on one PIX (PIX_HOLDS_MODEL_SEED, _RUNS, _STEPS)
	./scripts/model.sh
