-- A waiver waived again (another admin, a new reason) is an update of its row: its dues reach
-- sync as they do when a waiver is given or withdrawn (0035 logged inserts and deletes only).
CREATE TRIGGER dues_waivers_log_update AFTER UPDATE ON dues_waivers REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION dues_log_change();
