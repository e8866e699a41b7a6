-- Row-level security: the second wall between communities.
--
-- Every transaction a request runs in says who is asking: Database.transaction(userId:) sets
-- `app.current_user_id` for that transaction only. Background work that legitimately crosses
-- communities (message handlers, retention jobs, redeeming an invite) says so explicitly
-- with `app.system = 'on'` (Database.transaction(scope: .system)). A query that sets
-- neither sees no community's rows at all. The services' role owns no table, so it cannot
-- switch RLS off; the schema owner (migrations) is not subject to it.

CREATE FUNCTION app_current_user_id() RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('app.current_user_id', true), '')::uuid
$$;

CREATE FUNCTION app_is_system() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('app.system', true), '') = 'on'
$$;

-- The asking user's communities. SECURITY DEFINER (run as the owner, past RLS) so that the
-- policy on `members` can use it without recursing into itself. Policies call it as
-- `IN (SELECT ...)`, which PostgreSQL evaluates once per query, not once per row.
CREATE FUNCTION app_member_communities() RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT community_id FROM members WHERE user_id = app_current_user_id() AND left_at IS NULL
$$;

CREATE FUNCTION app_admin_communities() RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT community_id FROM members
    WHERE user_id = app_current_user_id() AND left_at IS NULL AND role = 'admin'
$$;

-- Communities the asking user created: the creator becomes the first admin before any
-- membership row exists.
CREATE FUNCTION app_created_communities() RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT id FROM communities WHERE created_by = app_current_user_id()
$$;

-- Counters kept by triggers must count whoever causes the change (a member leaving updates
-- `communities`, which only admins may update directly).
ALTER FUNCTION update_member_count() SECURITY DEFINER SET search_path = public;
ALTER FUNCTION update_comment_count() SECURITY DEFINER SET search_path = public;

-- communities ------------------------------------------------------------------------------
ALTER TABLE communities ENABLE ROW LEVEL SECURITY;
CREATE POLICY communities_read ON communities FOR SELECT
    USING (app_is_system() OR id IN (SELECT app_member_communities()));
CREATE POLICY communities_create ON communities FOR INSERT
    WITH CHECK (app_is_system() OR created_by = app_current_user_id());
CREATE POLICY communities_update ON communities FOR UPDATE
    USING (app_is_system() OR id IN (SELECT app_admin_communities()));
CREATE POLICY communities_delete ON communities FOR DELETE
    USING (app_is_system());

-- members: fellow members are visible; your own rows always (also after leaving) ---------------
ALTER TABLE members ENABLE ROW LEVEL SECURITY;
CREATE POLICY members_read ON members FOR SELECT
    USING (app_is_system() OR user_id = app_current_user_id()
           OR community_id IN (SELECT app_member_communities()));
CREATE POLICY members_create ON members FOR INSERT
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_admin_communities())
                OR (user_id = app_current_user_id() AND community_id IN (SELECT app_created_communities())));
CREATE POLICY members_update ON members FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id()
           OR community_id IN (SELECT app_admin_communities()));
CREATE POLICY members_delete ON members FOR DELETE
    USING (app_is_system());

-- invites: admins only; an invitee reaches one by code through a system transaction ------------
ALTER TABLE invites ENABLE ROW LEVEL SECURITY;
CREATE POLICY invites_admins ON invites FOR ALL
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_admin_communities()));

-- audit_log: a community's entries for its admins, account entries for their user --------------
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_read ON audit_log FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (community_id IS NULL AND user_id = app_current_user_id()));
-- Appending is how every service records what happened (auth before any user context exists).
CREATE POLICY audit_append ON audit_log FOR INSERT WITH CHECK (true);

-- family_members: the parent's own ----------------------------------------------------------
ALTER TABLE family_members ENABLE ROW LEVEL SECURITY;
CREATE POLICY family_members_owner ON family_members FOR ALL
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());

-- community content: members of the community -----------------------------------------------
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
CREATE POLICY events_members ON events FOR ALL
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));

ALTER TABLE posts ENABLE ROW LEVEL SECURITY;
CREATE POLICY posts_members ON posts FOR ALL
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));

ALTER TABLE transactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY transactions_members ON transactions FOR ALL
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));

ALTER TABLE dues ENABLE ROW LEVEL SECURITY;
CREATE POLICY dues_members ON dues FOR ALL
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));

ALTER TABLE media ENABLE ROW LEVEL SECURITY;
CREATE POLICY media_members ON media FOR ALL
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));

-- Rows below a community's content inherit its isolation: the subquery runs under the
-- parent table's policy.
ALTER TABLE rsvps ENABLE ROW LEVEL SECURITY;
CREATE POLICY rsvps_members ON rsvps FOR ALL
    USING (app_is_system() OR event_id IN (SELECT id FROM events))
    WITH CHECK (app_is_system() OR event_id IN (SELECT id FROM events));

ALTER TABLE reactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY reactions_members ON reactions FOR ALL
    USING (app_is_system() OR post_id IN (SELECT id FROM posts))
    WITH CHECK (app_is_system() OR post_id IN (SELECT id FROM posts));

ALTER TABLE comments ENABLE ROW LEVEL SECURITY;
CREATE POLICY comments_members ON comments FOR ALL
    USING (app_is_system() OR post_id IN (SELECT id FROM posts))
    WITH CHECK (app_is_system() OR post_id IN (SELECT id FROM posts));

ALTER TABLE poll_votes ENABLE ROW LEVEL SECURITY;
CREATE POLICY poll_votes_members ON poll_votes FOR ALL
    USING (app_is_system() OR post_id IN (SELECT id FROM posts))
    WITH CHECK (app_is_system() OR post_id IN (SELECT id FROM posts));

ALTER TABLE splits ENABLE ROW LEVEL SECURITY;
CREATE POLICY splits_members ON splits FOR ALL
    USING (app_is_system() OR transaction_id IN (SELECT id FROM transactions))
    WITH CHECK (app_is_system() OR transaction_id IN (SELECT id FROM transactions));

ALTER TABLE dues_payments ENABLE ROW LEVEL SECURITY;
CREATE POLICY dues_payments_members ON dues_payments FOR ALL
    USING (app_is_system() OR dues_id IN (SELECT id FROM dues))
    WITH CHECK (app_is_system() OR dues_id IN (SELECT id FROM dues));
