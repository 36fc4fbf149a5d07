# The two set-up commands of README.md are `make run` and `make test`; both
# provision PostgreSQL themselves (scripts/pg-ensure.sh).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
# staticcheck runs at a pinned version in make test (fetched through the Go
# module proxy, not a dependency of the module).
STATICCHECK_VERSION := v0.8.2

# .env (optional, see .env.example) is exported to every command.
ENV := set -a; [ ! -f .env ] || . ./.env; set +a

.PHONY: run test build vet fmt bench soak rank-eval clean-db

## run: start followfeed (HTTP + workers) with development defaults
run:
	@$(ENV); DATABASE_URL="$$(scripts/pg-ensure.sh followfeed)"; export DATABASE_URL; \
	 $(GO) build -o bin/followfeed ./cmd/followfeed && exec bin/followfeed serve --migrate

## test: go vet, staticcheck and gofmt, then the whole suite against a real
## PostgreSQL, a real Chromium and a real PgBouncer (each installed when missing), with the race detector, then every fuzz
## target for 2 s; screenshots of
## the pages land in ./screenshots
test:
	@DATABASE_URL="$$(scripts/pg-ensure.sh postgres)"; export DATABASE_URL; \
	 CHROMIUM_PATH="$$(scripts/browser-ensure.sh)" || { [ "$${CI:-}" != true ] || { echo "make test: CI=true and no Chromium could be installed" >&2; exit 1; }; echo "make test: no Chromium could be installed; browser tests will be skipped" >&2; }; \
	 export CHROMIUM_PATH; \
	 scripts/pgbouncer-ensure.sh >/dev/null || { [ "$${CI:-}" != true ] || { echo "make test: CI=true and no PgBouncer could be installed" >&2; exit 1; }; echo "make test: no PgBouncer could be installed; the PgBouncer test will be skipped" >&2; }; \
	 $(GO) vet ./... || exit 1; \
	 $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... || exit 1; \
	 unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	 [ -z "$$unformatted" ] || { echo "make test: not gofmt-formatted (run gofmt -w): $$unformatted" >&2; exit 1; }; \
	 $(GO) test -race -timeout 20m ./... && scripts/fuzz-short.sh

## lint-openapi: Redocly's recommended rules on httpapi/openapi.json (needs npx; go test's TestOpenAPILint checks the same rules without it)
lint-openapi:
	npx -y @redocly/cli@2.77.0 lint

## build: the product (bin/followfeed) and the lab (bin/followfeed-lab: bench, soak)
build:
	$(GO) build -o bin/followfeed ./cmd/followfeed && $(GO) build -o bin/followfeed-lab ./cmd/followfeed-lab

## bench: build scales S and M (once each, kept in databases followfeed_bench and
## followfeed_bench_m) and measure both side by side; pass flags with BENCH_FLAGS,
## e.g. make bench BENCH_FLAGS="--scale S"
bench:
	@$(ENV); DATABASE_URL="$$(scripts/pg-ensure.sh followfeed_bench)"; export DATABASE_URL; \
	 $(GO) build -o bin/followfeed ./cmd/followfeed && $(GO) build -o bin/followfeed-lab ./cmd/followfeed-lab && \
	 bin/followfeed-lab bench --out BENCHMARKS.md $(BENCH_FLAGS)

## soak: reliability scenarios against the real binary (bin/followfeed) (needs scale S from
## `make bench` for the load scenario); rewrites RELIABILITY.md. Pass flags
## with SOAK_FLAGS, e.g. make soak SOAK_FLAGS="--only smtp-chaos" (which rewrites that
## scenario's section and keeps the others). The whole suite runs first (go test -json)
## for the hostile-input section, so only when that scenario runs.
soak:
	@$(ENV); mkdir -p var; \
	 if [[ "$(SOAK_FLAGS)" != *--only* || "$(SOAK_FLAGS)" == *hostile-input* ]]; then \
	   DATABASE_URL="$$(scripts/pg-ensure.sh postgres)" $(GO) test -count=1 -json ./... > var/soak-tests.json || true; \
	 fi; \
	 DATABASE_URL="$$(scripts/pg-ensure.sh followfeed_bench)"; export DATABASE_URL; \
	 $(GO) build -o bin/followfeed ./cmd/followfeed && $(GO) build -o bin/followfeed-lab ./cmd/followfeed-lab && \
	 bin/followfeed-lab soak --out RELIABILITY.md --tests var/soak-tests.json $(SOAK_FLAGS)

## rank-eval: the ranking's quality on real arXiv listings (followfeed-lab rank-eval on
## RANK_EVAL_DATA/astro-ph-listings; ../shared/datasets/arxiv-metadata when it exists);
## rewrites BENCHMARKS.md's ranking section only. Pass flags with RANK_EVAL_FLAGS, e.g.
## make rank-eval RANK_EVAL_FLAGS="--split validation"
RANK_EVAL_DATA ?= ../shared/datasets/arxiv-metadata
rank-eval:
	@[ -d "$(RANK_EVAL_DATA)/astro-ph-listings" ] || { echo "make rank-eval: no $(RANK_EVAL_DATA)/astro-ph-listings; pass RANK_EVAL_DATA=DIR (the arxiv-metadata dataset)" >&2; exit 1; }; \
	 $(GO) build -o bin/followfeed-lab ./cmd/followfeed-lab && \
	 bin/followfeed-lab rank-eval --data "$(RANK_EVAL_DATA)" --out BENCHMARKS.md $(RANK_EVAL_FLAGS)

## clean-db: stop and delete the private cluster under ./var/pg
clean-db:
	@d=var/pg/data; if [ -e $$d ]; then b=$$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1); \
	 if [ $$(id -u) = 0 ]; then runuser -u postgres -- $$b/pg_ctl -D $$(readlink -f $$d) stop || true; \
	 else $$b/pg_ctl -D $$(readlink -f $$d) stop || true; fi; rm -rf $$(readlink -f $$d) var/pg; fi
