-- The feed's functions and mentions tightened after review (issue 22).
--
-- A correction to 0029's comment on app_content_author: it gives a member the name and avatar
-- of anyone who is or was a member of that community, whether or not they wrote anything
-- (members_read already shows a community's former members' ids to its members); the reads
-- call it only for the authors of what they return.
--
-- post_count_add is the counts' triggers' helper: SECURITY DEFINER, so callable by anyone it
-- is granted to, and it checks nobody; nothing but the triggers (which run as the owner) may
-- call it. feed_search_config told anyone a community's search language (and that the
-- community exists); it now answers `simple` to a non-member.
REVOKE EXECUTE ON FUNCTION post_count_add(uuid, uuid, text, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION feed_search_config(community uuid) RETURNS regconfig
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT coalesce(
        (SELECT t.oid::regconfig FROM pg_ts_config t JOIN pg_namespace n ON n.oid = t.cfgnamespace
         WHERE n.nspname = 'pg_catalog'
           AND (app_is_system() OR community = ANY (app_member_community_ids()))
           AND t.cfgname = (SELECT c.settings ->> 'searchLanguage' FROM communities c WHERE c.id = community)),
        'pg_catalog.simple'::regconfig)
$$;

-- A new search language rewrites the vectors through the same triggers that wrote them (the
-- poll's options were left out before): `content = content` fires them and changes nothing a
-- client syncs.
CREATE OR REPLACE FUNCTION communities_search_language_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    UPDATE posts SET content = content WHERE community_id = NEW.id;
    UPDATE comments SET content = content WHERE community_id = NEW.id;
    RETURN NULL;
END $$;

-- Who has been told of a mention is written only with the post or comment that mentions them:
-- by its author, or by an admin of the community editing it.
ALTER POLICY mentions_write ON mentions
    WITH CHECK (app_is_system()
                OR (community_id = ANY ((SELECT app_member_community_ids())::uuid[])
                    AND (EXISTS (SELECT 1 FROM posts p
                                 WHERE p.id = mentions.subject_id AND p.id = mentions.post_id
                                   AND p.community_id = mentions.community_id
                                   AND (p.author_id = app_current_user_id()
                                        OR p.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
                         OR EXISTS (SELECT 1 FROM comments c
                                    WHERE c.id = mentions.subject_id AND c.post_id = mentions.post_id
                                      AND c.community_id = mentions.community_id
                                      AND (c.author_id = app_current_user_id()
                                           OR c.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))))));
