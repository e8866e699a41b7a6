#!/bin/sh
# Runs once, when the compose PostgreSQL initialises its data volume: the schema owner (which
# runs migrations), the role the services connect as (no superuser, no BYPASSRLS), and the
# database. Passwords come from the environment, never from this file. Mirrors what
# scripts/stack.sh provisions for the local stack.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v owner_password="$ORBITCOVE_OWNER_PASSWORD" -v app_password="$ORBITCOVE_APP_PASSWORD" <<'SQL'
CREATE ROLE orbitcove_owner LOGIN PASSWORD :'owner_password';
CREATE ROLE orbitcove_app LOGIN PASSWORD :'app_password' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
-- Every statement the services send is bounded, one that is its own transaction too (each
-- transaction also sets the bound for itself). A role setting, not a connection's startup
-- parameter: PgBouncer refuses parameters it does not know.
ALTER ROLE orbitcove_app SET statement_timeout = '30s';
CREATE DATABASE orbitcove OWNER orbitcove_owner;
SQL
