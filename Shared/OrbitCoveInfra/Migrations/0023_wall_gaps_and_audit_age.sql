-- Where a hostile stranger found the second wall open, and the audit log's age kept.

-- calendar_feeds: a feed of one community is made only by a member of it, and a feed never
-- moves to another user, community or token afterwards (a feed of a community its owner has
-- since left may still be revoked, so the membership is checked when the feed is made) ------
DROP POLICY calendar_feeds_owner ON calendar_feeds;
CREATE POLICY calendar_feeds_read ON calendar_feeds FOR SELECT
    USING (app_is_system() OR user_id = app_current_user_id());
CREATE POLICY calendar_feeds_create ON calendar_feeds FOR INSERT
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id()
                AND (community_id IS NULL OR community_id IN (SELECT app_member_communities()))));
CREATE POLICY calendar_feeds_update ON calendar_feeds FOR UPDATE
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());
CREATE POLICY calendar_feeds_delete ON calendar_feeds FOR DELETE
    USING (app_is_system() OR user_id = app_current_user_id());

CREATE TRIGGER calendar_feeds_guard BEFORE UPDATE ON calendar_feeds
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'user_id', 'community_id', 'token_hash', 'created_at');

-- rsvps: a place in line is given, never taken. Only calendar_place_answers (the owner's,
-- run under the instance's lock) decides who waits; a member writing their own answer cannot
-- clear its `waitlisted`, move its `queued_at` earlier, or become a confirmed yes by writing
-- one: a new yes (or more seats) joins the end of the line and waits until it is placed,
-- which the service does in the same transaction ---------------------------------------------
CREATE FUNCTION guard_rsvp_place() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF app_trusted_writer(TG_RELID) THEN RETURN NEW; END IF;
    IF TG_OP = 'UPDATE' AND (NEW.waitlisted IS DISTINCT FROM OLD.waitlisted OR NEW.queued_at < OLD.queued_at) THEN
        RAISE EXCEPTION 'a place in line is given by calendar_place_answers' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'INSERT' AND NEW.waitlisted THEN
        RAISE EXCEPTION 'a place in line is given by calendar_place_answers' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.status = 'yes' AND (TG_OP = 'INSERT' OR OLD.status <> 'yes' OR NEW.plus_ones > OLD.plus_ones) THEN
        IF NEW.queued_at < now() THEN
            RAISE EXCEPTION 'a new yes joins the end of the line' USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.waitlisted := true;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rsvps_place_guard BEFORE INSERT OR UPDATE ON rsvps
    FOR EACH ROW EXECUTE FUNCTION guard_rsvp_place();

-- audit_log: the seed keeps entries two years; the retention job prunes by age ---------------
CREATE INDEX idx_audit_created ON audit_log(created_at);
