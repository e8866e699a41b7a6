-- The second wall made cheap, not weaker: the caller's communities are resolved once per
-- transaction instead of once per policy per query.
--
-- Before this, every policy asked `community_id IN (SELECT app_member_communities())` (or
-- app_admin_communities, app_fellow_users): SECURITY DEFINER set-returning SQL functions,
-- which PostgreSQL cannot inline, so each query that touched a community's rows planned and
-- ran their bodies again (each a scan of `members`, app_fellow_users a self-join), on top of
-- a planner misled by their 1,000-row estimate. Reading the members page cost about six
-- times the same read without row-level security (BENCHMARKS.md, "The second wall").
--
-- Now, as PostgREST does with a JWT's claims: Database.transaction(userId:) calls
-- app_enter_as_user(user) in the round trip that used to set `app.current_user_id` alone. It
-- sets that, reads the caller's memberships once (as the owner, past row-level security) and
-- keeps them in three transaction-local settings:
--
--   app.communities_of      the user they were read for
--   app.member_communities  the communities the user is a member of, as a uuid[] literal
--   app.admin_communities   those of them the user administers
--
-- The policies compare against them through app_member_community_ids() and
-- app_admin_community_ids(): plain SQL functions PostgreSQL inlines, called as
-- `community_id = ANY ((SELECT app_member_community_ids())::uuid[])`, an init plan evaluated
-- once per query (the array is parsed once, not per row). They believe the settings only
-- for the user they were read for: when `app.current_user_id` was set some other way (by
-- hand, by a benchmark, by an older build) they read the memberships now, as before. A new
-- policy writes `community_id = ANY ((SELECT app_member_community_ids())::uuid[])` (or the
-- admin one); the old `IN (SELECT app_member_communities())` still works, at the old price.
--
-- Kept true inside the transaction: a trigger on `members` reads them again after any change
-- to one of the caller's own memberships (creating a community, joining, leaving, being
-- promoted or removed), so a statement after the change sees what the change made. A
-- savepoint rolled back takes the refreshed settings with it (settings are transactional).
--
-- Threat model. The services' role can set any `app.*` setting: it could always set
-- `app.current_user_id` to anybody, or `app.system` to 'on', and now it could also write
-- `app.member_communities` by hand. So the wall still stands against what it stands against
-- (a query the application did not mean to run, in a transaction set up by Database: a wrong
-- id in a WHERE clause, a missing join), and still not against code that runs arbitrary SQL
-- as orbitcove_app; that was true before and is true now. What the settings hold is derived
-- by the owner's code from `members`, never passed in by the services.
--
-- One change of meaning: the memberships are those the caller had when the transaction
-- began (plus the caller's own changes in it), as a REPEATABLE READ transaction already saw
-- them. A member removed by an admin while one of their transactions is in flight keeps
-- reading that community until that transaction ends; the community gate, which answers
-- from a cache, allows as much and more.

-- The caller's memberships as committed now, read past row-level security (a policy on
-- members cannot read members itself); `administered` keeps only those they administer.
CREATE FUNCTION app_read_communities(administered boolean) RETURNS uuid[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT coalesce(array_agg(community_id), '{}') FROM members
    WHERE user_id = app_current_user_id() AND left_at IS NULL AND (role = 'admin' OR NOT administered)
$$;

-- Reads the caller's memberships into the settings the policies compare against.
CREATE FUNCTION app_cache_communities() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    caller uuid := app_current_user_id();
    mine uuid[];
    administered uuid[];
BEGIN
    SELECT coalesce(array_agg(community_id), '{}'), coalesce(array_agg(community_id) FILTER (WHERE role = 'admin'), '{}')
    INTO mine, administered
    FROM members WHERE user_id = caller AND left_at IS NULL;
    PERFORM set_config('app.member_communities', mine::text, true),
            set_config('app.admin_communities', administered::text, true),
            set_config('app.communities_of', coalesce(caller::text, ''), true);
END $$;

-- The one way a request's transaction says who asks: the user, and their communities.
CREATE FUNCTION app_enter_as_user(caller uuid) RETURNS void
LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = public AS $$
BEGIN
    PERFORM set_config('app.current_user_id', caller::text, true);
    PERFORM app_cache_communities();
END $$;

-- What the policies compare against: the settings, when they were read for the user asking.
CREATE FUNCTION app_member_community_ids() RETURNS uuid[]
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN current_setting('app.communities_of', true) = current_setting('app.current_user_id', true)
                THEN coalesce(nullif(current_setting('app.member_communities', true), ''), '{}')::uuid[]
                ELSE app_read_communities(false) END
$$;

CREATE FUNCTION app_admin_community_ids() RETURNS uuid[]
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN current_setting('app.communities_of', true) = current_setting('app.current_user_id', true)
                THEN coalesce(nullif(current_setting('app.admin_communities', true), ''), '{}')::uuid[]
                ELSE app_read_communities(true) END
$$;

-- The caller's own memberships changed: read them again before the next statement.
CREATE FUNCTION members_refresh_caller_communities() RETURNS TRIGGER
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    PERFORM app_cache_communities();
    RETURN NULL;
END $$;
CREATE TRIGGER members_caller_joined AFTER INSERT ON members FOR EACH ROW
    WHEN (NEW.user_id = app_current_user_id())
    EXECUTE FUNCTION members_refresh_caller_communities();
CREATE TRIGGER members_caller_changed AFTER UPDATE ON members FOR EACH ROW
    WHEN ((NEW.user_id = app_current_user_id() OR OLD.user_id = app_current_user_id())
          AND (NEW.left_at IS DISTINCT FROM OLD.left_at OR NEW.role IS DISTINCT FROM OLD.role
               OR NEW.community_id IS DISTINCT FROM OLD.community_id OR NEW.user_id IS DISTINCT FROM OLD.user_id))
    EXECUTE FUNCTION members_refresh_caller_communities();
CREATE TRIGGER members_caller_removed AFTER DELETE ON members FOR EACH ROW
    WHEN (OLD.user_id = app_current_user_id())
    EXECUTE FUNCTION members_refresh_caller_communities();

-- The set-returning functions keep their names and meaning for the functions that call them
-- (guard_member_update, calendar_place_answers, app_dependant_name, calendar_move_answers,
-- and any policy written the old way), and now answer from the settings too.
CREATE OR REPLACE FUNCTION app_member_communities() RETURNS SETOF uuid
LANGUAGE sql STABLE ROWS 10 AS $$
    SELECT unnest(app_member_community_ids())
$$;

CREATE OR REPLACE FUNCTION app_admin_communities() RETURNS SETOF uuid
LANGUAGE sql STABLE ROWS 10 AS $$
    SELECT unnest(app_admin_community_ids())
$$;

-- users_read still asks `id IN (SELECT app_fellow_users())`: the fellow members of the
-- caller's communities, now read from those communities' rows alone (PL/pgSQL, so its plan is
-- kept by the session instead of made again per query).
CREATE OR REPLACE FUNCTION app_fellow_users() RETURNS SETOF uuid
LANGUAGE plpgsql STABLE ROWS 100 SECURITY DEFINER SET search_path = public AS $$
BEGIN
    RETURN QUERY SELECT user_id FROM members WHERE community_id = ANY (app_member_community_ids()) AND left_at IS NULL;
END $$;

-- Every policy that asked `x IN (SELECT app_member_communities())` (or the admin one) now asks
-- `x = ANY ((SELECT app_member_community_ids())::uuid[])`: the same rows, one init plan per
-- query instead of a function's body planned and run per policy. The rewrite is mechanical,
-- so it is done on the policies' own text; nothing else in them changes.
DO $$
DECLARE
    policy record;
    old_form CONSTANT text := 'IN \( SELECT app_(member|admin)_communities\(\) AS app_\1_communities\)';
    new_form CONSTANT text := '= ANY (( SELECT app_\1_community_ids())::uuid[])';
    statement text;
BEGIN
    FOR policy IN
        SELECT schemaname, tablename, policyname, qual, with_check FROM pg_policies
        WHERE concat(qual, with_check) ~ 'app_(member|admin)_communities\(\)'
    LOOP
        statement := format('ALTER POLICY %I ON %I.%I', policy.policyname, policy.schemaname, policy.tablename);
        IF policy.qual IS NOT NULL THEN
            statement := statement || format(' USING (%s)', regexp_replace(policy.qual, old_form, new_form, 'g'));
        END IF;
        IF policy.with_check IS NOT NULL THEN
            statement := statement
                || format(' WITH CHECK (%s)', regexp_replace(policy.with_check, old_form, new_form, 'g'));
        END IF;
        EXECUTE statement;
    END LOOP;
    IF EXISTS (SELECT FROM pg_policies WHERE concat(qual, with_check) ~ 'app_(member|admin)_communities\(\)') THEN
        RAISE EXCEPTION 'a policy still calls app_member_communities() or app_admin_communities()';
    END IF;
END $$;
