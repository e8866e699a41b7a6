-- The services connect as `orbitcove_app`, a role that owns nothing: it can read and write
-- rows but cannot alter the schema, disable triggers or bypass row-level security. The role
-- itself is cluster-wide and created by the operator (scripts/stack.sh does it locally);
-- migrations run as the schema owner.
GRANT USAGE ON SCHEMA public TO orbitcove_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO orbitcove_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO orbitcove_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO orbitcove_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO orbitcove_app;
