-- An answer is one statement that is its own transaction (issue 20, the write path): PostgreSQL
-- commits it as it ends, so the instance's lock is released without waiting for anything from
-- core. Until now the answer ran inside BEGIN … COMMIT, with the COMMIT queued behind it
-- (`Database.closingTransaction`): every answer to the same instance still waited, besides
-- PostgreSQL's work, for the answer's result to reach core's event loop and the COMMIT to come
-- back. pgbench of the one-event shape (16 clients, every answer to one event; BENCHMARKS.md):
-- 417–458 answers a second with the COMMIT as a round trip, 445–528 with the answer as one
-- statement (the reads in a read-only transaction before it, a statement after it that confirms
-- the commit, as core does).
--
-- The statement enters as the answerer itself (`app_enter_as_user`: the same check of the
-- account and the same settings every policy reads), and marks the request's Idempotency-Key
-- when it has one (`app_idempotency_applied`, after giving the transaction its id so that the
-- key is marked whatever the answer writes), then answers as `calendar_answer_announced` does.
-- Every row says whether the key was marked. What core read of the event first (in a
-- transaction of its own) is checked by `calendar_answer` against the rows as they now stand,
-- as it was before: under READ COMMITTED the read and the answer never shared a snapshot.
-- `calendar_answer_announced` stays for the release that still calls it while this one rolls
-- out (deploy/k8s/migrate-job.yaml runs migrations first).
CREATE FUNCTION calendar_answer_committing(
    key_owner UUID, idempotency_key TEXT, key_claim UUID,
    event UUID, instance TIMESTAMP WITH TIME ZONE, person UUID, dependant UUID, answer rsvp_status, extra INTEGER,
    remark TEXT, seen_rows INTEGER, seen_sequences BIGINT, community UUID, trace TEXT,
    promoted_queue TEXT, promoted_type TEXT, promoted_version INTEGER, promoted_data JSONB
)
RETURNS TABLE (
    id UUID, user_id UUID, family_member_id UUID, status TEXT, plus_ones INTEGER, note TEXT,
    responded_at TIMESTAMP WITH TIME ZONE, waitlisted BOOLEAN, previous_status TEXT, mine BOOLEAN,
    key_marked BOOLEAN
)
LANGUAGE plpgsql SET search_path = public AS $$
#variable_conflict use_column
DECLARE
    marked BOOLEAN := false;
BEGIN
    -- `app_enter_as_user` is STRICT: given no one, it would enter no one.
    IF person IS NULL THEN
        RAISE EXCEPTION 'an answer needs its answerer' USING ERRCODE = '22004';
    END IF;
    PERFORM app_enter_as_user(person);
    IF idempotency_key IS NOT NULL THEN
        IF key_owner IS DISTINCT FROM person THEN
            RAISE EXCEPTION 'an answer marks only its answerer''s Idempotency-Key' USING ERRCODE = '22023';
        END IF;
        PERFORM pg_current_xact_id();
        marked := app_idempotency_applied(key_owner, idempotency_key, key_claim);
    END IF;
    RETURN QUERY
    SELECT a.id, a.user_id, a.family_member_id, a.status, a.plus_ones, a.note, a.responded_at, a.waitlisted,
           a.previous_status, a.mine, marked
    FROM calendar_answer_announced(event, instance, person, dependant, answer, extra, remark, seen_rows,
                                   seen_sequences, community, trace, promoted_queue, promoted_type,
                                   promoted_version, promoted_data) a;
END $$;
