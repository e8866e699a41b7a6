import Foundation
import OrbitCoveInfra
import Testing

@Suite struct SQLScriptTests {
    @Test func splitsAtTopLevelSemicolonsOnly() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (note TEXT DEFAULT 'x;y', "odd;name" INT);
            /* block; comment /* nested; */ still comment; */
            INSERT INTO a VALUES ('it''s; fine', $1);
            CREATE FUNCTION f() RETURNS TRIGGER AS $$
            BEGIN
                PERFORM 1; RETURN NEW;
            END;
            $$ LANGUAGE plpgsql;
            DO $body$ BEGIN RAISE NOTICE 'a;b'; END $body$;
            SELECT 1
            """
        let statements = SQLScript.statements(in: script)
        #expect(statements.count == 5)
        #expect(statements[0].hasSuffix(#"CREATE TABLE a (note TEXT DEFAULT 'x;y', "odd;name" INT)"#))
        #expect(statements[1].hasSuffix("INSERT INTO a VALUES ('it''s; fine', $1)"))
        #expect(statements[2].hasPrefix("CREATE FUNCTION f()"))
        #expect(statements[2].hasSuffix("$$ LANGUAGE plpgsql"))
        #expect(statements[3] == "DO $body$ BEGIN RAISE NOTICE 'a;b'; END $body$")
        #expect(statements[4] == "SELECT 1")
    }

    @Test func dropsEmptyAndCommentOnlyStatements() {
        #expect(SQLScript.statements(in: ";;\n-- only a comment\n;  ").isEmpty)
    }

    @Test func everyBundledMigrationSplitsIntoStatements() throws {
        for migration in try Migration.bundled() {
            let statements = SQLScript.statements(in: migration.sql)
            #expect(!statements.isEmpty, "\(migration.name)")
            for statement in statements {
                let code = statement.split(separator: "\n").filter {
                    !$0.trimmingCharacters(in: .whitespaces).hasPrefix("--")
                }
                let keyword = code.joined(separator: " ").split(whereSeparator: \.isWhitespace).first
                #expect(
                    ["CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "INSERT", "UPDATE", "DELETE", "LOCK", "SET", "DO"]
                        .contains(
                            keyword.map(String.init) ?? ""),
                    "\(migration.name): \(statement.prefix(60))")
            }
        }
    }
}
