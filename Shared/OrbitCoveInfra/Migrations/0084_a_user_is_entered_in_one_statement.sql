-- Entering as a user takes two statements where it took five (issue 20, the second wall).
-- `app_enter_as_user` (0024, 0076, 0081) looked the account up, set `app.current_user_id`, and
-- called `app_cache_communities`, a second `SECURITY DEFINER` function with its own
-- `search_path`, which read the memberships and set the other three settings: in PL/pgSQL each
-- of those is a query started and ended by PostgreSQL's executor, in every transaction a user's
-- request opens and in every members page. It now reads the account and its memberships in one
-- statement and sets the four settings in another. What it keeps, and what it refuses, are
-- unchanged: `SecondWallCommunitiesTests.theEntryKeepsExactlyTheCallersMemberships` holds it to
-- the owner's own read of `members`. `app_cache_communities` stays, for the trigger that reads
-- the caller's memberships again after they change (0024); the two, and
-- `app_read_communities`, keep the same memberships (`left_at IS NULL`; `role = 'admin'` for
-- those administered).
--
-- `app_members_page` (0083) asks `app_is_system()` in its condition rather than as a sub-select:
-- PL/pgSQL evaluates a condition that is a plain expression without the executor; a sub-select
-- is a query of its own.
CREATE OR REPLACE FUNCTION app_enter_as_user(caller uuid) RETURNS void
LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = public AS $$
DECLARE
    live boolean;
    mine uuid[];
    administered uuid[];
BEGIN
    SELECT u.deleted_at IS NULL,
           coalesce(array_agg(m.community_id) FILTER (WHERE m.community_id IS NOT NULL), '{}'),
           coalesce(array_agg(m.community_id) FILTER (WHERE m.role = 'admin'), '{}')
    INTO live, mine, administered
    FROM users u LEFT JOIN members m ON m.user_id = u.id AND m.left_at IS NULL
    WHERE u.id = caller
    GROUP BY u.id;
    -- No row: no account; false: a deleted one.
    IF live IS NOT TRUE THEN
        RAISE EXCEPTION 'this account has been deleted' USING ERRCODE = 'OCA01';
    END IF;
    PERFORM set_config('app.current_user_id', caller::text, true),
            set_config('app.member_communities', mine::text, true),
            set_config('app.admin_communities', administered::text, true),
            set_config('app.communities_of', caller::text, true);
END $$;

CREATE OR REPLACE FUNCTION app_members_page(
    viewer UUID, community UUID, after_joined TIMESTAMP WITH TIME ZONE, after_id UUID, page_size INTEGER
)
RETURNS TABLE (
    user_id UUID, display_name TEXT, avatar_url TEXT, nickname TEXT, role TEXT, is_creator BOOLEAN,
    joined_at TIMESTAMP WITH TIME ZONE, id UUID
)
LANGUAGE plpgsql SET search_path = public AS $$
#variable_conflict use_column
BEGIN
    -- `app_enter_as_user` is STRICT: given no one, it would enter no one.
    IF viewer IS NULL OR page_size IS NULL THEN
        RAISE EXCEPTION 'a page of members needs its reader and its size' USING ERRCODE = '22004';
    END IF;
    -- Made to be its own transaction. Inside another it must not read as the system (every
    -- policy would pass) nor turn a transaction entered as someone else into the viewer's.
    IF app_is_system()
       OR coalesce(current_setting('app.current_user_id', true), '') NOT IN ('', viewer::TEXT) THEN
        RAISE EXCEPTION 'a page of members is read as its reader alone' USING ERRCODE = '42501';
    END IF;
    IF (after_joined IS NULL) <> (after_id IS NULL) THEN
        RAISE EXCEPTION 'a cursor is a time and an id' USING ERRCODE = '22023';
    END IF;
    PERFORM app_enter_as_user(viewer);
    IF after_joined IS NULL THEN
        RETURN QUERY
        SELECT m.user_id, u.display_name::TEXT, u.avatar_url::TEXT, m.nickname::TEXT, m.role::TEXT,
               m.user_id = c.created_by, m.joined_at, m.id
        FROM members m JOIN users u ON u.id = m.user_id JOIN communities c ON c.id = m.community_id
        WHERE m.community_id = app_members_page.community AND m.left_at IS NULL
        ORDER BY m.joined_at ASC, m.id ASC
        LIMIT page_size;
    ELSE
        RETURN QUERY
        SELECT m.user_id, u.display_name::TEXT, u.avatar_url::TEXT, m.nickname::TEXT, m.role::TEXT,
               m.user_id = c.created_by, m.joined_at, m.id
        FROM members m JOIN users u ON u.id = m.user_id JOIN communities c ON c.id = m.community_id
        WHERE m.community_id = app_members_page.community AND m.left_at IS NULL
          AND (m.joined_at, m.id) > (after_joined, after_id)
        ORDER BY m.joined_at ASC, m.id ASC
        LIMIT page_size;
    END IF;
END
$$;
