# The two commands of the README are `make run` and `make test`.
.PHONY: run test demo events build compose-config compose-secrets bench soak faults model

run: ## run everything locally: PostgreSQL, Temporal dev server with UI, migrations, demo accounts, API and worker
	./scripts/run.sh

test: ## every check and test, as CI runs them
	./scripts/test.sh

demo: ## replay the demo scenario against a running `make run`
	./scripts/demo.sh

events: ## print the service's events as they reach the broker (pixctl events tail)
	go run ./cmd/pixctl events tail

build:
	go build -o .bin/pixd ./cmd/pixd
	go build -o .bin/pixctl ./cmd/pixctl
	go build -o .bin/pspsim ./cmd/pspsim

compose-secrets: ## the random secrets docker-compose.yml reads (deploy/secrets, ignored by git; made once, kept after): run before the first `docker compose up`
	./scripts/compose-secrets.sh

compose-config: ## validate docker-compose.yml, the Prometheus rules and the Dockerfile (make test does too)
	@bash -c 'source scripts/lib.sh && build_pinned staticcheck tools/lint/go.mod honnef.co/go/tools/cmd/staticcheck && check_deploy_files'

bench: ## load, ceilings and the targets on the dev server and a Temporal with PostgreSQL persistence, 1+1 and 2+2 processes (docs/benchmarks.md)
	./scripts/bench.sh

soak: ## 100,000 webhooks (BENCH_SOAK) through the whole pipeline on the PostgreSQL-backed Temporal: the books, the duration, the resources (docs/benchmarks.md)
	BENCH_SOAK=$${BENCH_SOAK:-100000} ./scripts/bench.sh

faults: ## the fault suite under load (docs/faults.md), then the long model-based histories (10,000 operations)
	./scripts/faults.sh
	./scripts/model.sh

model: ## the model-based random histories alone (PIX_MODEL_SEED, PIX_MODEL_OPS)
	./scripts/model.sh
