-- Corrections to the seed's member counting.
--
-- The seed defaults member_count to 1 and also counts the creator's membership row through
-- the trigger, which would start every community at 2. It also never counted a member who
-- re-joins (left_at back to NULL) or a membership row that is deleted outright.
ALTER TABLE communities ALTER COLUMN member_count SET DEFAULT 0;
ALTER TABLE communities ALTER COLUMN member_count SET NOT NULL;

CREATE OR REPLACE FUNCTION update_member_count()
RETURNS TRIGGER AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NEW.left_at IS NULL THEN
        UPDATE communities SET member_count = member_count + 1, updated_at = NOW()
        WHERE id = NEW.community_id;
    ELSIF TG_OP = 'UPDATE' AND OLD.left_at IS NULL AND NEW.left_at IS NOT NULL THEN
        UPDATE communities SET member_count = member_count - 1, updated_at = NOW()
        WHERE id = NEW.community_id;
    ELSIF TG_OP = 'UPDATE' AND OLD.left_at IS NOT NULL AND NEW.left_at IS NULL THEN
        UPDATE communities SET member_count = member_count + 1, updated_at = NOW()
        WHERE id = NEW.community_id;
    ELSIF TG_OP = 'DELETE' AND OLD.left_at IS NULL THEN
        UPDATE communities SET member_count = member_count - 1, updated_at = NOW()
        WHERE id = OLD.community_id;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER trigger_member_count ON members;
CREATE TRIGGER trigger_member_count
AFTER INSERT OR UPDATE OR DELETE ON members
FOR EACH ROW EXECUTE FUNCTION update_member_count();
