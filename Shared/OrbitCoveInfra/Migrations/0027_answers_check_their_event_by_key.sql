-- An answer's policies look up its own event by key instead of listing every event the caller
-- can see (issue 20; BENCHMARKS.md, "Answers").
--
-- rsvps_read, rsvps_write and rsvps_change asked `event_id IN (SELECT id FROM events)`, which
-- PostgreSQL plans as a hashed subplan over every row of `events` that events' own policy lets
-- through: a sequential scan of the whole table, twice on an answer's upsert (its check, and
-- the read of the row it conflicts with). An answer cost more with every event of every
-- community (1 ms per scan at 7,000 events; the answers benchmark's floor fell from about
-- 1,500 to 645 upserts a second once the calendar benchmark's events were in the database).
-- `EXISTS (SELECT 1 FROM events e WHERE e.id = rsvps.event_id)` asks the same of one row by
-- its primary key, with events' policy applied to it as before: the same rows pass.

ALTER POLICY rsvps_read ON rsvps
    USING (app_is_system() OR user_id = app_current_user_id()
           OR EXISTS (SELECT 1 FROM events e WHERE e.id = rsvps.event_id));

ALTER POLICY rsvps_write ON rsvps
    WITH CHECK (app_is_system()
                OR (user_id = app_current_user_id()
                    AND EXISTS (SELECT 1 FROM events e WHERE e.id = rsvps.event_id)
                    AND (family_member_id IS NULL
                         OR EXISTS (SELECT 1 FROM family_members f
                                    WHERE f.id = rsvps.family_member_id AND f.user_id = app_current_user_id()))));

ALTER POLICY rsvps_change ON rsvps
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system()
                OR (user_id = app_current_user_id()
                    AND EXISTS (SELECT 1 FROM events e WHERE e.id = rsvps.event_id)
                    AND (family_member_id IS NULL
                         OR EXISTS (SELECT 1 FROM family_members f
                                    WHERE f.id = rsvps.family_member_id AND f.user_id = app_current_user_id()))));
