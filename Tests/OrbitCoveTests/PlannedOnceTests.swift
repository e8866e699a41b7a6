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
}
