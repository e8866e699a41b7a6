# OrbitCove's front door. `make` lists the targets; README.md explains the local stack.

SHELL := /bin/bash
.DEFAULT_GOAL := help

STACK := ./scripts/stack.sh
SWIFT_SOURCES := Package.swift Services Shared Tests Tools Benchmarks Clients/Swift/Package.swift Clients/Swift/Sources Clients/Swift/Tests
OPENAPI := deploy/openapi/openapi.yaml
DEADLINE := python3 scripts/test-deadline.py
# Tests running at once: each starts services with database pools of their own (unbounded, the
# suite opened close to PostgreSQL's 1,000 connections and starved two cores).
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 16
# Extra arguments for swift test, e.g. make test SWIFT_TEST_ARGS='--filter AuthTests'.
SWIFT_TEST_ARGS ?=

# The tests run against the same local servers as `make up`, in their own database and vhost.
export ORBITCOVE_TEST_DATABASE_URL ?= postgres://orbitcove_app:orbitcove_app@127.0.0.1:55432/orbitcove_test
export ORBITCOVE_TEST_MIGRATION_DATABASE_URL ?= postgres://orbitcove_owner:orbitcove_owner@127.0.0.1:55432/orbitcove_test
export ORBITCOVE_TEST_AMQP_URL ?= amqp://orbitcove:orbitcove@127.0.0.1:55672/orbitcove_test
export ORBITCOVE_TEST_REDIS_URL ?= redis://127.0.0.1:56379/1
export ORBITCOVE_TEST_S3_URL ?= http://127.0.0.1:55900

.PHONY: help up down logs status servers migrate build test calendar-check media-check test-env lint format openapi-check deploy-check schemathesis client-check client-test clean-local

help: ## List the targets
	@awk 'BEGIN { FS = ":.*## " } /^[a-z-]+:.*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

up: ## Start everything: servers, build, migrate, the five services and the gateway on :8080
	$(STACK) up

down: ## Stop everything `make up` or `make servers` started (data is kept)
	$(STACK) down

logs: ## Follow every log under .local/
	$(STACK) logs

status: ## Show which components are running
	@$(STACK) status

servers: ## Start and provision PostgreSQL, Redis and RabbitMQ only
	$(STACK) servers

migrate: ## Apply database migrations to the development database
	$(STACK) migrate

build: ## swift build
	swift build

test: ## Run the tests against the local servers (starts them if needed)
	$(STACK) servers
	@# The media tests run the S3 store against moto, an S3-protocol server.
	$(STACK) s3
	@# The calendar feed test reads feeds with icalendar and recurring-ical-events.
	$(STACK) install-calendar-tools
	@$(MAKE) --no-print-directory openapi-check
	@$(MAKE) --no-print-directory client-check
	@$(MAKE) --no-print-directory deploy-check
	swift build --build-tests
	ORBITCOVE_MIGRATION_DATABASE_URL=$(ORBITCOVE_TEST_MIGRATION_DATABASE_URL) $(STACK) migrate
ifeq ($(strip $(SWIFT_TEST_ARGS)),)
	@# Each run has a deadline (a few times its usual length); past it, the tests that never
	@# ended are named and the run is stopped.
	@date -u +'==> %FT%TZ swift test'
	$(DEADLINE) 1200 swift test --skip-build --skip FaultToleranceTests --skip LifecycleTests
	@# These count the process's threads, so nothing may run beside them.
	$(DEADLINE) 600 swift test --skip-build --filter LifecycleTests
	@$(MAKE) --no-print-directory calendar-check
	@$(MAKE) --no-print-directory media-check
	@# These stop and start the shared broker, so they run alone, after the rest.
	@date -u +'==> %FT%TZ swift test (fault tolerance)'
	$(DEADLINE) 900 swift test --skip-build --filter FaultToleranceTests
	@# Last: the app's client against the running services, then the services against the
	@# OpenAPI document. In this order: schemathesis spends the per-address budgets (all its
	@# requests come from the gateway's one client address), and a client test right after it
	@# was refused with 429 (a budget of 10 a minute, as the invite lookups' is).
	@$(MAKE) --no-print-directory client-test
	@$(MAKE) --no-print-directory schemathesis
else
	swift test $(SWIFT_TEST_ARGS)
endif

# Our RFC 5545 expansion against python-dateutil (the RFC's own examples, the rules known to
# trip implementations, and random rules in three zones across DST changes), and our ICS feeds
# through icalendar and recurring-ical-events (same instances as our expansion).
CALENDAR_PYTHON := .local/tools/calendar/bin/python
CALENDAR_RANDOM_RULES ?= 400
calendar-check: ## Compare recurrence and ICS output with python-dateutil and recurring-ical-events
	@$(STACK) install-calendar-tools
	swift build --product orbitcove-rrule-dump
	swift build --product orbitcove-ics-dump
	$(CALENDAR_PYTHON) scripts/calendar/compare.py --random $(CALENDAR_RANDOM_RULES) --seed 5545
	$(CALENDAR_PYTHON) scripts/calendar/ics_compare.py

media-check: ## Compare our SigV4 signatures with botocore's (AWS's published examples and random requests)
	@$(STACK) install-media-tools
	swift build --product orbitcove-sigv4-dump
	.local/tools/sigv4/bin/python scripts/media/sigv4_compare.py --dump "$$(swift build --show-bin-path)/orbitcove-sigv4-dump" --random 500 --seed 4

test-env: ## Print the test settings, for eval "$(make -s test-env)" before a manual swift test
	@echo "export ORBITCOVE_TEST_DATABASE_URL=$(ORBITCOVE_TEST_DATABASE_URL)"
	@echo "export ORBITCOVE_TEST_MIGRATION_DATABASE_URL=$(ORBITCOVE_TEST_MIGRATION_DATABASE_URL)"
	@echo "export ORBITCOVE_TEST_AMQP_URL=$(ORBITCOVE_TEST_AMQP_URL)"
	@echo "export ORBITCOVE_TEST_REDIS_URL=$(ORBITCOVE_TEST_REDIS_URL)"
	@echo "export ORBITCOVE_TEST_S3_URL=$(ORBITCOVE_TEST_S3_URL)"
	@echo "export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH)"

lint: ## Check formatting (swift format, strict)
	swift format lint --strict --recursive $(SWIFT_SOURCES)

format: ## Reformat the Swift sources in place
	swift format --in-place --recursive $(SWIFT_SOURCES)

openapi-check: ## Validate the OpenAPI document
	@python3 -c 'import openapi_spec_validator, jwt, cryptography' 2>/dev/null || $(STACK) install
	python3 -m openapi_spec_validator $(OPENAPI)

# Everything under deploy/ checked without a container engine: the compose file as
# docker-compose 1.29 reads it, both Dockerfiles with hadolint, the Kubernetes manifests against
# the API schemas, and the gateway routing of the local stack, compose and Kubernetes.
TOOLS := .local/tools
K8S_MANIFESTS := $(wildcard deploy/k8s/*.yaml)
deploy-check: ## Check docker-compose.yml, the Dockerfiles, deploy/k8s and the gateway routing
	@$(STACK) install-deploy-tools
	ORBITCOVE_POSTGRES_PASSWORD=check ORBITCOVE_OWNER_PASSWORD=check ORBITCOVE_APP_PASSWORD=check \
		ORBITCOVE_RABBITMQ_PASSWORD=check ORBITCOVE_MEDIA_SIGNING_KEY=check $(TOOLS)/compose/bin/docker-compose -f docker-compose.yml config -q
	$(TOOLS)/deploy/bin/hadolint deploy/Dockerfile deploy/gateway.Dockerfile
	$(TOOLS)/deploy/bin/kubernetes-validate --strict --quiet --kubernetes-version 1.30.0 \
		$(filter-out deploy/k8s/kustomization.yaml,$(K8S_MANIFESTS))
	$(TOOLS)/deploy/bin/python scripts/check-routing.py --compose $(TOOLS)/compose/bin/docker-compose

# The iOS app's client (Clients/Swift, a package of its own) is generated from the document by
# swift-openapi-generator's build plugin. client-check fails on a document rule the client needs
# (Clients/Swift/scripts/check-document.py), on any generator diagnostic (a schema it would skip
# is a property the app silently loses) and on generated code that does not compile.
CLIENT := Clients/Swift
CLIENT_GENERATOR := $(CLIENT)/.build/debug/swift-openapi-generator-tool
client-check: ## Generate and build the Swift client from the OpenAPI document, with zero generator diagnostics
	python3 $(CLIENT)/scripts/check-document.py $(OPENAPI)
	cd $(CLIENT) && swift build --build-tests
	rm -rf $(CLIENT)/.build/check && mkdir -p $(CLIENT)/.build/check
	$(CLIENT_GENERATOR) generate $(OPENAPI) --config $(CLIENT)/Sources/OrbitCoveClient/openapi-generator-config.yaml \
		--output-directory $(CLIENT)/.build/check --diagnostics-output-path $(CLIENT)/.build/check/diagnostics.yaml \
		>$(CLIENT)/.build/check/generator.log 2>&1 || { cat $(CLIENT)/.build/check/generator.log; exit 1; }
	@if ! grep -qx 'diagnostics: \[\]' $(CLIENT)/.build/check/diagnostics.yaml; then \
		cat $(CLIENT)/.build/check/diagnostics.yaml; echo "error: the generator reported diagnostics (above)"; exit 1; fi
	@echo "client-check: generated with no diagnostics"

# The client's tests call the running stack through the gateway as the app would.
client-test: ## Start the stack if needed and run the Swift client's tests against it
	$(STACK) up
	cd $(CLIENT) && ORBITCOVE_CLIENT_TEST_URL=http://127.0.0.1:8080 swift test

# Schemathesis (pinned, in .local/tools/schemathesis) sends requests generated from the OpenAPI
# document to the running services through the gateway and fails on any answer the document
# does not allow. `stack.sh up` starts whatever is not running (building first: a no-op when built).
schemathesis: ## Start the stack if needed and check the services against the OpenAPI document
	$(STACK) up
	./scripts/schemathesis.sh

clean-local: ## Stop everything and DELETE all local data (.local/: databases, queues, keys, logs)
	$(STACK) clean
