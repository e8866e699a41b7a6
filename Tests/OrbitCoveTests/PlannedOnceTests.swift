import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// What PostgreSQL plans on every call instead of once per session: before migration 0063 about a
/// third of an answer's time in PostgreSQL (BENCHMARKS.md, issue 20). Planning cannot be seen
/// from a test but by timing, so these hold the catalog to the shapes that are planned once.
@Suite struct PlannedOnceTests {
    /// A SQL-language function that PostgreSQL cannot inline (SECURITY DEFINER, a SET clause, a
    /// sub-select, a body that reads a table) is planned again for every statement that calls it
    /// (PostgreSQL 15 keeps its plan only while that statement runs), and a policy's check runs
    /// in every statement that reads or writes its table. Such a function is written in PL/pgSQL
    /// instead, which keeps its statements' plans for the session. (A set-returning function in
    /// a policy's `IN (SELECT …)` is planned with the statement, and is left out.) The body test
    /// is a pattern: `(SELECT`, or a `FROM` followed by a name and a space, so
    /// `extract(epoch FROM x)` passes and `substring(x FROM 2 FOR 3)` would not.
    @Test func noPolicyCallsAFunctionPlannedOnEveryCall() async throws {
        let planned = try await withTestDatabase { db in
            var found: [String] = []
            for try await (policy, function) in try await db.client.query(
                """
                SELECT c.relname || '.' || pol.polname, p.proname
                FROM pg_policy pol
                JOIN pg_class c ON c.oid = pol.polrelid
                JOIN pg_depend d ON d.classid = 'pg_policy'::regclass AND d.objid = pol.oid
                    AND d.refclassid = 'pg_proc'::regclass
                JOIN pg_proc p ON p.oid = d.refobjid
                JOIN pg_language l ON l.oid = p.prolang
                WHERE l.lanname = 'sql' AND NOT p.proretset
                  AND (p.prosecdef OR p.proconfig IS NOT NULL OR p.prosrc ~* '\\(\\s*select\\M'
                       OR p.prosrc ~* '\\mfrom\\s+[a-z_][a-z_0-9.]*\\s')
                ORDER BY 1, 2
                """, logger: TestEnvironment.logger
            ).decode((String, String).self) {
                found.append("\(policy) calls \(function)")
            }
            return found
        }
        #expect(planned.isEmpty, "planned on every call: \(planned)")
    }

    /// A policy's check runs for every row a statement reads or writes. The caller's settings
    /// it compares with (`app_is_system()`, `app_current_user_id()`: each a `current_setting`
    /// looked up by name) are read once per statement, as a sub-select PostgreSQL runs once (an
    /// init plan): `(SELECT app_is_system())`. Migration 0067; read per row, they cost the
    /// members page a fifth of its rate through the wall (BENCHMARKS.md, "The second wall").
    @Test func noPolicyReadsTheCallersSettingsForEveryRow() async throws {
        let perRow = try await withTestDatabase { db in
            var found: [String] = []
            for try await policy in try await db.client.query(
                """
                SELECT c.relname || '.' || pol.polname
                FROM pg_policy pol JOIN pg_class c ON c.oid = pol.polrelid
                WHERE concat(pg_get_expr(pol.polqual, pol.polrelid), ' ', pg_get_expr(pol.polwithcheck, pol.polrelid))
                      ~ '(?<!SELECT )app_(is_system|current_user_id)\\(\\)'
                ORDER BY 1
                """, logger: TestEnvironment.logger
            ).decode(String.self) {
                found.append(policy)
            }
            return found
        }
        #expect(perRow.isEmpty, "read for every row: \(perRow)")
    }

    /// The functions an answer runs (each once, or once per row it writes), as migration 0063 left
    /// them, and the feed's search helpers every post, comment and search runs (0064): in
    /// PL/pgSQL, and those whose statements PostgreSQL would keep planning afresh (a custom plan
    /// that looks cheaper than the generic one, for the same index scans) told to plan them once.
    @Test func theHotPathsFunctionsKeepTheirPlans() async throws {
        let functions = try await withTestDatabase { db in
            var found: [String: (language: String, config: [String])] = [:]
            for try await (name, language, config) in try await db.client.query(
                """
                SELECT p.proname, l.lanname, coalesce(p.proconfig, '{}')
                FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
                WHERE p.pronamespace = 'public'::regnamespace AND p.proname IN (
                    'app_writes_for', 'app_trusted_writer', 'calendar_hold_event', 'calendar_answer',
                    'calendar_place_instance', 'calendar_answer_announced', 'feed_search_config', 'feed_cjk_pairs',
                    'feed_cjk_terms', 'feed_search_vector')
                """, logger: TestEnvironment.logger
            ).decode((String, String, [String]).self) {
                found[name] = (language, config)
            }
            return found
        }
        #expect(functions.count == 10)
        for (name, function) in functions {
            #expect(function.language == "plpgsql", "\(name) is \(function.language)")
        }
        for name in ["calendar_hold_event", "calendar_answer", "calendar_place_instance"] {
            #expect(
                functions[name]?.config.contains("plan_cache_mode=force_generic_plan") == true,
                "\(name): \(functions[name]?.config ?? [])")
        }
    }

    /// The feed's search helpers in PL/pgSQL (migration 0064) give what their SQL versions
    /// (0029, 0034) gave, for each kind of text a post can hold: the old bodies are made again
    /// as temporary functions and both are asked the same.
    @Test func theFeedsSearchHelpersAnswerAsTheirSQLVersionsDid() async throws {
        let texts: [String?] = [
            nil, "", "   ", "Practice moved to 6pm", "Crème brûlée, naïve café", "練習は六時に変更",
            "東京タワー", "연습 시간", "mixed 東京 and Zürich 연습!", String(repeating: "漢字かなカナ", count: 400),
            "\u{3040}\u{30ff}\u{4e00}\u{9fff}\u{ac00}\u{d7af}", "emoji 🎉 and 東",
        ]
        let differing = try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { db in
            try await db.withConnection { connection in
                let logger = TestEnvironment.logger
                try await connection.run(
                    """
                    CREATE FUNCTION pg_temp.old_pairs(body text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT AS $$
                        SELECT coalesce(array_agg(DISTINCT substr(m.run[1], i, 2)), '{}')
                        FROM regexp_matches(body, '[\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff\\uac00-\\ud7af]+', 'g') AS m(run),
                             generate_series(1, greatest(char_length(m.run[1]) - 1, 1)) AS i
                    $$
                    """, logger: logger)
                try await connection.run(
                    """
                    CREATE FUNCTION pg_temp.old_terms(body text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT AS $$
                        SELECT coalesce(array_agg(DISTINCT t), '{}')
                        FROM (SELECT unnest(pg_temp.old_pairs(body))
                              UNION
                              SELECT m.ch[1]
                              FROM regexp_matches(body, '[\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff\\uac00-\\ud7af]', 'g') AS m(ch)
                             ) AS terms(t)
                    $$
                    """, logger: logger)
                try await connection.run(
                    """
                    CREATE FUNCTION pg_temp.old_vector(config regconfig, body text) RETURNS tsvector LANGUAGE sql STABLE AS $$
                        SELECT to_tsvector(config, unaccent(coalesce(body, ''))) || array_to_tsvector(pg_temp.old_terms(coalesce(body, '')))
                    $$
                    """, logger: logger)
                var differing: [String] = []
                for text in texts {
                    for try await same in try await connection.query(
                        """
                        SELECT feed_cjk_pairs(\(text)) IS NOT DISTINCT FROM pg_temp.old_pairs(\(text))
                           AND feed_cjk_terms(\(text)) IS NOT DISTINCT FROM pg_temp.old_terms(\(text))
                           AND feed_search_vector('pg_catalog.simple', \(text))
                               IS NOT DISTINCT FROM pg_temp.old_vector('pg_catalog.simple', \(text))
                           AND feed_search_vector('pg_catalog.french', \(text))
                               IS NOT DISTINCT FROM pg_temp.old_vector('pg_catalog.french', \(text))
                        """, logger: logger
                    ).decode(Bool.self) where !same {
                        differing.append(String((text ?? "NULL").prefix(40)))
                    }
                }
                return differing
            }
        }
        #expect(differing.isEmpty, "answered differently for \(differing)")
    }
}
