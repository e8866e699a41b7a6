-- An answer and its messages in one statement (issue 20, the write path): `calendar_answer`
-- (0059) and the outbox rows of what it returns, so that nothing but PostgreSQL's own work runs
-- while the answer holds its instance's lock, and core sends the COMMIT right behind it
-- (`Database.closingTransaction`). A PL/pgSQL function, whose plans are kept for the session:
-- sent as one query each time, the statement would be planned on every answer.
--
-- The messages are the payloads core encoded (`Outbox.Template`), completed here with what
-- only the answer knows, each field named as the payload's property: `event.rsvp_changed` for
-- the answer (its previous status and whether it waits), `event.waitlist_promoted` for every
-- other answer it gave a place (whose it is). Written as the answerer, under the outbox's
-- policy (0053).
CREATE FUNCTION calendar_answer_announced(
    event UUID, instance TIMESTAMP WITH TIME ZONE, person UUID, dependant UUID, answer rsvp_status, extra INTEGER,
    remark TEXT, seen_rows INTEGER, seen_sequences BIGINT, community UUID, trace TEXT,
    changed_queue TEXT, changed_type TEXT, changed_version INTEGER, changed_data JSONB,
    promoted_queue TEXT, promoted_type TEXT, promoted_version INTEGER, promoted_data JSONB
)
RETURNS TABLE (
    id UUID, user_id UUID, family_member_id UUID, status TEXT, plus_ones INTEGER, note TEXT,
    responded_at TIMESTAMP WITH TIME ZONE, waitlisted BOOLEAN, previous_status TEXT, mine BOOLEAN
)
LANGUAGE plpgsql SET search_path = public AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH answered AS MATERIALIZED (
        SELECT * FROM calendar_answer(event, instance, person, dependant, answer, extra, remark, seen_rows,
                                      seen_sequences)
    ), announced AS (
        INSERT INTO outbox (id, queue, message_type, message_version, occurred_at, community_id, actor_id, data,
                            traceparent)
        SELECT gen_random_uuid(),
               CASE WHEN a.mine THEN changed_queue ELSE promoted_queue END,
               CASE WHEN a.mine THEN changed_type ELSE promoted_type END,
               CASE WHEN a.mine THEN changed_version ELSE promoted_version END,
               clock_timestamp(), community, person,
               CASE WHEN a.mine
                    THEN changed_data || jsonb_build_object('previousStatus', a.previous_status,
                                                            'waitlisted', a.waitlisted)
                    ELSE promoted_data || jsonb_build_object('userId', a.user_id,
                                                             'familyMemberId', a.family_member_id)
               END,
               trace
        FROM answered a
        WHERE a.mine OR NOT a.waitlisted
        ORDER BY a.mine DESC, a.id
    )
    SELECT a.id, a.user_id, a.family_member_id, a.status, a.plus_ones, a.note, a.responded_at, a.waitlisted,
           a.previous_status, a.mine
    FROM answered a;
END $$;
