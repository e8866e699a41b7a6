-- A page of a community's members is one statement that enters as its reader (issue 20, the hot
-- read path): one round trip to PostgreSQL where a transaction entered as the reader takes four
-- (BEGIN, `app_enter_as_user`, the page, COMMIT), each of them a wait and a turn of core's event
-- loop. It is the read every member's client opens a community with, and the one the core read
-- benchmark runs uncached.
--
-- The function is not SECURITY DEFINER: it runs as the services' role, under row-level security
-- as the reader, after entering as them (`app_enter_as_user`, which refuses a deleted account and
-- sets what every policy compares against). A statement outside a transaction is its own, so
-- what the entry sets ends with it (`set_config(…, true)`), as it does for
-- `calendar_answer_committing` (0082). Each branch's query is planned and kept per connection, as
-- a prepared statement's is. Called inside a transaction, it refuses one that acts for the
-- system or for another user. `after_joined` and `after_id` (both or neither) are the keyset
-- cursor: the members after that one, oldest first, by `joined_at`, then `id`.
CREATE FUNCTION app_members_page(
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
    IF (SELECT app_is_system())
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

REVOKE EXECUTE ON FUNCTION app_members_page(UUID, UUID, TIMESTAMP WITH TIME ZONE, UUID, INTEGER) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_members_page(UUID, UUID, TIMESTAMP WITH TIME ZONE, UUID, INTEGER) TO orbitcove_app;
