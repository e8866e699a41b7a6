-- The second wall, closed: every table whose rows belong to a user or a community has a
-- policy for each command, and every insert and update is checked (`WITH CHECK`), so a
-- request context can neither read nor write what the application would refuse it.
-- Tests/OrbitCoveTests/SecondWallTests.swift runs the forbidden statements as orbitcove_app.

-- The people the asking user shares a community with (themselves included).
CREATE FUNCTION app_fellow_users() RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT DISTINCT other.user_id
    FROM members mine JOIN members other ON other.community_id = mine.community_id
    WHERE mine.user_id = app_current_user_id() AND mine.left_at IS NULL AND other.left_at IS NULL
$$;

-- Whether a guard trigger should let a change through unchecked: the system said so, or the
-- change comes from one of the owner's own SECURITY DEFINER functions (the counters).
CREATE FUNCTION app_trusted_writer(relation oid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT app_is_system() OR current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = relation)
$$;

-- users: yourself and your fellow members; only you change your row; accounts are made and
-- anonymised by the system (auth's sign-in, the retention job) -----------------------------
ALTER TABLE users ENABLE ROW LEVEL SECURITY;
CREATE POLICY users_read ON users FOR SELECT
    USING (app_is_system() OR id = app_current_user_id() OR id IN (SELECT app_fellow_users()));
CREATE POLICY users_create ON users FOR INSERT WITH CHECK (app_is_system());
CREATE POLICY users_update ON users FOR UPDATE
    USING (app_is_system() OR id = app_current_user_id())
    WITH CHECK (app_is_system() OR id = app_current_user_id());
CREATE POLICY users_delete ON users FOR DELETE USING (app_is_system());

-- What a user may not change about their own row, whatever the policy lets through.
CREATE FUNCTION guard_user_update() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF app_trusted_writer(TG_RELID) THEN RETURN NEW; END IF;
    IF NEW.apple_id IS DISTINCT FROM OLD.apple_id OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'only the system changes an account''s identity or deletion'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER users_guard BEFORE UPDATE ON users FOR EACH ROW EXECUTE FUNCTION guard_user_update();

-- refresh_tokens: the owner's; auth works on them as the system ---------------------------
ALTER TABLE refresh_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY refresh_tokens_owner ON refresh_tokens FOR ALL
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());

-- notifications: only your own; the notifications service writes them as the system --------
ALTER TABLE notifications ENABLE ROW LEVEL SECURITY;
CREATE POLICY notifications_read ON notifications FOR SELECT
    USING (app_is_system() OR user_id = app_current_user_id());
CREATE POLICY notifications_create ON notifications FOR INSERT WITH CHECK (app_is_system());
CREATE POLICY notifications_update ON notifications FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());
CREATE POLICY notifications_delete ON notifications FOR DELETE
    USING (app_is_system() OR user_id = app_current_user_id());

-- communities: what an admin may read, they may keep; nobody re-homes a community ----------
DROP POLICY communities_update ON communities;
CREATE POLICY communities_update ON communities FOR UPDATE
    USING (app_is_system() OR id IN (SELECT app_admin_communities()))
    WITH CHECK (app_is_system() OR id IN (SELECT app_admin_communities()));

CREATE FUNCTION guard_community_update() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF app_trusted_writer(TG_RELID) THEN RETURN NEW; END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.created_by IS DISTINCT FROM OLD.created_by
       OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.member_count IS DISTINCT FROM OLD.member_count
       OR NEW.subscription_status IS DISTINCT FROM OLD.subscription_status THEN
        RAISE EXCEPTION 'only the system changes a community''s identity, counts or subscription'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER communities_guard BEFORE UPDATE ON communities
    FOR EACH ROW EXECUTE FUNCTION guard_community_update();

-- members: a member may change their own row (nickname, preferences, leaving) but not their
-- role, not a removal, and not come back after leaving (rejoining is an invite's work, done
-- as the system); admins manage everyone's ----------------------------------------------------
DROP POLICY members_update ON members;
CREATE POLICY members_update ON members FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id()
           OR community_id IN (SELECT app_admin_communities()))
    WITH CHECK (app_is_system() OR user_id = app_current_user_id()
                OR community_id IN (SELECT app_admin_communities()));

CREATE FUNCTION guard_member_update() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF app_trusted_writer(TG_RELID) THEN RETURN NEW; END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.community_id IS DISTINCT FROM OLD.community_id
       OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.joined_at IS DISTINCT FROM OLD.joined_at THEN
        RAISE EXCEPTION 'a membership cannot move' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.left_at IS NOT NULL AND NEW.left_at IS DISTINCT FROM OLD.left_at THEN
        RAISE EXCEPTION 'a former member comes back through an invite' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.community_id NOT IN (SELECT app_admin_communities())
       AND (NEW.role IS DISTINCT FROM OLD.role OR NEW.removed_by IS DISTINCT FROM OLD.removed_by) THEN
        RAISE EXCEPTION 'only admins change roles or remove members' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER members_guard BEFORE UPDATE ON members FOR EACH ROW EXECUTE FUNCTION guard_member_update();

-- audit_log: entries are appended by the one who acted (or the system), never forged ---------
DROP POLICY audit_append ON audit_log;
CREATE POLICY audit_append ON audit_log FOR INSERT
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());
CREATE POLICY audit_prune ON audit_log FOR DELETE USING (app_is_system());

-- outbox and inbox belong to the services: a request may add its messages to the outbox in
-- its own transaction (as itself), everything else is the relay's and the consumers' work ----
ALTER TABLE outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY outbox_append ON outbox FOR INSERT
    WITH CHECK (app_is_system() OR actor_id = app_current_user_id());
CREATE POLICY outbox_system_read ON outbox FOR SELECT USING (app_is_system());
CREATE POLICY outbox_system_update ON outbox FOR UPDATE USING (app_is_system()) WITH CHECK (app_is_system());
CREATE POLICY outbox_system_delete ON outbox FOR DELETE USING (app_is_system());

ALTER TABLE inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY inbox_system ON inbox FOR ALL USING (app_is_system()) WITH CHECK (app_is_system());

-- Rows a person owns inside a community: every member of the community sees them, only
-- their owner writes them (RSVPs also for the owner's own dependants) -------------------------
DROP POLICY rsvps_members ON rsvps;
CREATE POLICY rsvps_read ON rsvps FOR SELECT USING (app_is_system() OR event_id IN (SELECT id FROM events));
CREATE POLICY rsvps_write ON rsvps FOR INSERT
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND event_id IN (SELECT id FROM events)
                AND (family_member_id IS NULL
                     OR family_member_id IN (SELECT id FROM family_members WHERE user_id = app_current_user_id()))));
CREATE POLICY rsvps_change ON rsvps FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND event_id IN (SELECT id FROM events)
                AND (family_member_id IS NULL
                     OR family_member_id IN (SELECT id FROM family_members WHERE user_id = app_current_user_id()))));
CREATE POLICY rsvps_delete ON rsvps FOR DELETE USING (app_is_system() OR user_id = app_current_user_id());

DROP POLICY reactions_members ON reactions;
CREATE POLICY reactions_read ON reactions FOR SELECT USING (app_is_system() OR post_id IN (SELECT id FROM posts));
CREATE POLICY reactions_write ON reactions FOR INSERT
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND post_id IN (SELECT id FROM posts)));
CREATE POLICY reactions_change ON reactions FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND post_id IN (SELECT id FROM posts)));
CREATE POLICY reactions_delete ON reactions FOR DELETE USING (app_is_system() OR user_id = app_current_user_id());

DROP POLICY poll_votes_members ON poll_votes;
CREATE POLICY poll_votes_read ON poll_votes FOR SELECT USING (app_is_system() OR post_id IN (SELECT id FROM posts));
CREATE POLICY poll_votes_write ON poll_votes FOR INSERT
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND post_id IN (SELECT id FROM posts)));
CREATE POLICY poll_votes_change ON poll_votes FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND post_id IN (SELECT id FROM posts)));
CREATE POLICY poll_votes_delete ON poll_votes FOR DELETE USING (app_is_system() OR user_id = app_current_user_id());

-- Comments: written as yourself; edited by their author; removed by their author or an admin.
DROP POLICY comments_members ON comments;
CREATE POLICY comments_read ON comments FOR SELECT USING (app_is_system() OR post_id IN (SELECT id FROM posts));
CREATE POLICY comments_write ON comments FOR INSERT
    WITH CHECK (app_is_system() OR (author_id = app_current_user_id() AND post_id IN (SELECT id FROM posts)));
CREATE POLICY comments_change ON comments FOR UPDATE
    USING (app_is_system() OR author_id = app_current_user_id()
           OR post_id IN (SELECT id FROM posts WHERE community_id IN (SELECT app_admin_communities())))
    WITH CHECK (app_is_system() OR post_id IN (SELECT id FROM posts));
CREATE POLICY comments_delete ON comments FOR DELETE
    USING (app_is_system() OR author_id = app_current_user_id()
           OR post_id IN (SELECT id FROM posts WHERE community_id IN (SELECT app_admin_communities())));
