-- The feed's search helpers were SQL-language functions that PostgreSQL cannot inline (a table
-- read, SECURITY DEFINER, a sub-select), so every post and comment written, and every search,
-- planned them again (migration 0063 says why; `pg_stat_statements` over `make test` showed
-- each planned on every call, 0.2 to 0.8 ms a plan). The same statements, in PL/pgSQL, which
-- keeps their plans for the session. Their volatility, strictness and security are as before.
CREATE OR REPLACE FUNCTION feed_search_config(community uuid) RETURNS regconfig
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
BEGIN
    RETURN coalesce(
        (SELECT t.oid::regconfig FROM pg_ts_config t JOIN pg_namespace n ON n.oid = t.cfgnamespace
         WHERE n.nspname = 'pg_catalog'
           AND (app_is_system() OR community = ANY (app_member_community_ids()))
           AND t.cfgname = (SELECT c.settings ->> 'searchLanguage' FROM communities c WHERE c.id = community)),
        'pg_catalog.simple'::regconfig);
END $$;

CREATE OR REPLACE FUNCTION feed_cjk_pairs(body text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT substr(m.run[1], i, 2)), '{}')
        FROM regexp_matches(body, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+', 'g') AS m(run),
             generate_series(1, greatest(char_length(m.run[1]) - 1, 1)) AS i);
END $$;

CREATE OR REPLACE FUNCTION feed_cjk_terms(body text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT t), '{}')
        FROM (SELECT unnest(feed_cjk_pairs(body))
              UNION
              SELECT m.ch[1]
              FROM regexp_matches(body, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]', 'g') AS m(ch)
             ) AS terms(t));
END $$;

CREATE OR REPLACE FUNCTION feed_search_vector(config regconfig, body text) RETURNS tsvector
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN to_tsvector(config, unaccent(coalesce(body, ''))) || array_to_tsvector(feed_cjk_terms(coalesce(body, '')));
END $$;
