-- The data-model seed, as written: triggers.
-- TRIGGERS
-- ============================================

-- Update member count on insert/delete
CREATE OR REPLACE FUNCTION update_member_count()
RETURNS TRIGGER AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE communities SET member_count = member_count + 1, updated_at = NOW()
        WHERE id = NEW.community_id;
    ELSIF TG_OP = 'UPDATE' AND OLD.left_at IS NULL AND NEW.left_at IS NOT NULL THEN
        UPDATE communities SET member_count = member_count - 1, updated_at = NOW()
        WHERE id = NEW.community_id;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER trigger_member_count
AFTER INSERT OR UPDATE ON members
FOR EACH ROW EXECUTE FUNCTION update_member_count();

-- Update comment count on posts
CREATE OR REPLACE FUNCTION update_comment_count()
RETURNS TRIGGER AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE posts SET comment_count = comment_count + 1 WHERE id = NEW.post_id;
    ELSIF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN
        UPDATE posts SET comment_count = comment_count - 1 WHERE id = NEW.post_id;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER trigger_comment_count
AFTER INSERT OR UPDATE ON comments
FOR EACH ROW EXECUTE FUNCTION update_comment_count();

-- Set editable_until on post creation
CREATE OR REPLACE FUNCTION set_post_editable_until()
RETURNS TRIGGER AS $$
BEGIN
    NEW.editable_until := NEW.created_at + INTERVAL '24 hours';
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER trigger_post_editable
BEFORE INSERT ON posts
FOR EACH ROW EXECUTE FUNCTION set_post_editable_until();
