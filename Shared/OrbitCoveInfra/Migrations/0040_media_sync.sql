-- Media in sync (issue 24): a community's uploads travel as the `media` kind, so a phone learns
-- when a photo it shows turns `ready` (or `failed`) without asking. An avatar belongs to no
-- community and is not in any community's sync.
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE ON media
    FOR EACH ROW WHEN (NEW.community_id IS NOT NULL) EXECUTE FUNCTION log_community_change('media');
CREATE TRIGGER trigger_change_log_delete AFTER DELETE ON media
    FOR EACH ROW WHEN (OLD.community_id IS NOT NULL) EXECUTE FUNCTION log_community_change('media');
