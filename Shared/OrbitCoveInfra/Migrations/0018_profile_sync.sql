-- A member's name and avatar come from their user row, so changing them (PATCH /me) changes
-- the member as every one of their communities syncs it: one change-log row per community.
CREATE FUNCTION log_profile_change() RETURNS TRIGGER
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.display_name IS DISTINCT FROM OLD.display_name OR NEW.avatar_url IS DISTINCT FROM OLD.avatar_url THEN
        INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
        SELECT community_id, 'member', NEW.id, 'update' FROM members
        WHERE user_id = NEW.id AND left_at IS NULL;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER trigger_profile_change_log AFTER UPDATE OF display_name, avatar_url ON users
FOR EACH ROW EXECUTE FUNCTION log_profile_change();
