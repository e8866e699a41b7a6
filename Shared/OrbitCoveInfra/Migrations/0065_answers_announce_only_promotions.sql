-- An answer no longer writes `event.rsvp_changed` (issue 20, the write path). Nobody consumed
-- it: the notifications service told nobody (organisers read attendance), no other service
-- read it, and open streams and sync see an answer through the change log. Yet each answer
-- paid for it: an outbox row and its policy check under the instance's lock, the relay's
-- claim and publish, RabbitMQ's delivery and the notifications service's decoding and inbox
-- row: the notifications service and RabbitMQ alone used 29 % of a core of the 180 % the
-- machine spent on 700 answers a second (BENCHMARKS.md). The statement now writes only
-- `event.waitlist_promoted`, for each other answer it gave a place.
CREATE FUNCTION calendar_answer_announced(
    event UUID, instance TIMESTAMP WITH TIME ZONE, person UUID, dependant UUID, answer rsvp_status, extra INTEGER,
    remark TEXT, seen_rows INTEGER, seen_sequences BIGINT, community UUID, trace TEXT,
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
        SELECT gen_random_uuid(), promoted_queue, promoted_type, promoted_version, clock_timestamp(), community,
               person, promoted_data || jsonb_build_object('userId', a.user_id, 'familyMemberId', a.family_member_id),
               trace
        FROM answered a
        WHERE NOT a.mine AND NOT a.waitlisted
        ORDER BY a.id
    )
    SELECT a.id, a.user_id, a.family_member_id, a.status, a.plus_ones, a.note, a.responded_at, a.waitlisted,
           a.previous_status, a.mine
    FROM answered a;
END $$;

-- The function it replaces (19 arguments) stays for the release that still calls it: migrations
-- run before a release's services roll out (deploy/k8s/migrate-job.yaml), and until then the
-- running core answers through it. A later migration drops it.
