-- A search for one Japanese, Chinese or Korean character finds the texts that contain it
-- (issue 22). Texts were indexed by their pairs of neighbouring characters only, so a query
-- of one character (猫, 雨) matched only texts where that character stood alone. Texts are now
-- indexed by their single characters as well; a query's runs of two or more characters still
-- ask for all of their pairs. Vectors written before this are written again.
CREATE FUNCTION feed_cjk_terms(body text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT coalesce(array_agg(DISTINCT t), '{}')
    FROM (SELECT unnest(feed_cjk_pairs(body))
          UNION
          SELECT m.ch[1]
          FROM regexp_matches(body, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]', 'g') AS m(ch)
         ) AS terms(t)
$$;

CREATE OR REPLACE FUNCTION feed_search_vector(config regconfig, body text) RETURNS tsvector
LANGUAGE sql STABLE AS $$
    SELECT to_tsvector(config, unaccent(coalesce(body, ''))) || array_to_tsvector(feed_cjk_terms(coalesce(body, '')))
$$;

UPDATE posts SET content = content WHERE content ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]';
UPDATE comments SET content = content WHERE content ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]';
