-- Every policy reads the caller's settings once per statement instead of once per row (issue 20,
-- the second wall).
--
-- The policies ask `app_is_system()` and `user_id = app_current_user_id()`: SQL functions that
-- PostgreSQL inlines into `current_setting('app.system', true)` and the like, which it then
-- evaluates for every row it checks, each a look-up of a setting by its name. A statement
-- that scans a few hundred rows to keep twenty paid for it hundreds of times: the members
-- page, beside the same read without row-level security, went at 0.53 of its rate on a
-- database of a few dozen communities (BENCHMARKS.md, "The second wall", 2026-11-30).
--
-- Written as sub-selects, `(SELECT app_is_system())` and `(SELECT app_current_user_id())`,
-- they are init plans: run once when the statement first needs them, their value then
-- compared per row as a parameter, as 0024 made of the communities' lists. The same rows
-- pass: the functions are STABLE, so they answer the same all through a statement already.
-- The rewrite is mechanical, done on the policies' own text as 0024's was; a new policy
-- writes the sub-selects (PlannedOnceTests holds every policy to it).
DO $$
DECLARE
    policy record;
    per_row CONSTANT text := '(?<!SELECT )app_(is_system|current_user_id)\(\)';
    once CONSTANT text := '(SELECT app_\1())';
    statement text;
BEGIN
    FOR policy IN
        SELECT schemaname, tablename, policyname, qual, with_check FROM pg_policies
        WHERE concat(qual, ' ', with_check) ~ per_row
    LOOP
        statement := format('ALTER POLICY %I ON %I.%I', policy.policyname, policy.schemaname, policy.tablename);
        IF policy.qual IS NOT NULL THEN
            statement := statement || format(' USING (%s)', regexp_replace(policy.qual, per_row, once, 'g'));
        END IF;
        IF policy.with_check IS NOT NULL THEN
            statement := statement
                || format(' WITH CHECK (%s)', regexp_replace(policy.with_check, per_row, once, 'g'));
        END IF;
        EXECUTE statement;
    END LOOP;
    IF EXISTS (SELECT FROM pg_policies WHERE concat(qual, ' ', with_check) ~ per_row) THEN
        RAISE EXCEPTION 'a policy still reads the caller''s settings for every row';
    END IF;
END $$;
