-- The second wall for community content, before the calendar, feed and finances write it:
-- members read a community's rows; a member creates rows as themself; the creator changes or
-- deletes their own and admins any (the seed's row-level rules; the 24-hour window on posts
-- is the application's); dues are the admins'; and no row moves to another community or
-- changes hands. SecondWallTests runs the forbidden statements.

-- Refuses a change to any of the columns named in the trigger's arguments, unless the system
-- (or one of the owner's own functions) makes it.
CREATE FUNCTION guard_immutable_columns() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
    column_name TEXT;
BEGIN
    IF app_trusted_writer(TG_RELID) THEN RETURN NEW; END IF;
    FOREACH column_name IN ARRAY TG_ARGV LOOP
        IF to_jsonb(NEW) -> column_name IS DISTINCT FROM to_jsonb(OLD) -> column_name THEN
            RAISE EXCEPTION '%.% cannot change', TG_TABLE_NAME, column_name USING ERRCODE = 'insufficient_privilege';
        END IF;
    END LOOP;
    RETURN NEW;
END $$;

-- events -----------------------------------------------------------------------------------
DROP POLICY events_members ON events;
CREATE POLICY events_read ON events FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY events_create ON events FOR INSERT
    WITH CHECK (app_is_system() OR (created_by = app_current_user_id()
                                    AND community_id IN (SELECT app_member_communities())));
CREATE POLICY events_change ON events FOR UPDATE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (created_by = app_current_user_id() AND community_id IN (SELECT app_member_communities())))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY events_delete ON events FOR DELETE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (created_by = app_current_user_id() AND community_id IN (SELECT app_member_communities())));
CREATE TRIGGER events_guard BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'community_id', 'created_by', 'created_at');

-- posts --------------------------------------------------------------------------------------
DROP POLICY posts_members ON posts;
CREATE POLICY posts_read ON posts FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY posts_create ON posts FOR INSERT
    WITH CHECK (app_is_system() OR (author_id = app_current_user_id()
                                    AND community_id IN (SELECT app_member_communities())));
CREATE POLICY posts_change ON posts FOR UPDATE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (author_id = app_current_user_id() AND community_id IN (SELECT app_member_communities())))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY posts_delete ON posts FOR DELETE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (author_id = app_current_user_id() AND community_id IN (SELECT app_member_communities())));
CREATE TRIGGER posts_guard BEFORE UPDATE ON posts
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'community_id', 'author_id', 'created_at');

-- transactions (expenses) ---------------------------------------------------------------------
DROP POLICY transactions_members ON transactions;
CREATE POLICY transactions_read ON transactions FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY transactions_create ON transactions FOR INSERT
    WITH CHECK (app_is_system() OR (created_by = app_current_user_id()
                                    AND community_id IN (SELECT app_member_communities())));
CREATE POLICY transactions_change ON transactions FOR UPDATE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (created_by = app_current_user_id() AND community_id IN (SELECT app_member_communities())))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY transactions_delete ON transactions FOR DELETE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (created_by = app_current_user_id() AND community_id IN (SELECT app_member_communities())));
CREATE TRIGGER transactions_guard BEFORE UPDATE ON transactions
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'community_id', 'created_by', 'created_at');

-- dues: set up and changed by admins ----------------------------------------------------------
DROP POLICY dues_members ON dues;
CREATE POLICY dues_read ON dues FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY dues_admins ON dues FOR INSERT
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_admin_communities()));
CREATE POLICY dues_change ON dues FOR UPDATE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_admin_communities()));
CREATE POLICY dues_delete ON dues FOR DELETE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities()));
CREATE TRIGGER dues_guard BEFORE UPDATE ON dues
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'community_id', 'created_by', 'created_at');

-- media ----------------------------------------------------------------------------------------
DROP POLICY media_members ON media;
CREATE POLICY media_read ON media FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY media_create ON media FOR INSERT
    WITH CHECK (app_is_system() OR (uploaded_by = app_current_user_id()
                                    AND community_id IN (SELECT app_member_communities())));
CREATE POLICY media_change ON media FOR UPDATE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (uploaded_by = app_current_user_id() AND community_id IN (SELECT app_member_communities())))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));
CREATE POLICY media_delete ON media FOR DELETE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (uploaded_by = app_current_user_id() AND community_id IN (SELECT app_member_communities())));
CREATE TRIGGER media_guard BEFORE UPDATE ON media
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'community_id', 'uploaded_by', 'created_at');

-- rows below content do not move either ------------------------------------------------------
CREATE TRIGGER rsvps_guard BEFORE UPDATE ON rsvps
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'event_id', 'user_id', 'family_member_id');
CREATE TRIGGER comments_guard BEFORE UPDATE ON comments
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'post_id', 'author_id', 'created_at');
CREATE TRIGGER reactions_guard BEFORE UPDATE ON reactions
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'post_id', 'user_id');
CREATE TRIGGER poll_votes_guard BEFORE UPDATE ON poll_votes
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'post_id', 'user_id');
