package sqlbundle

// ForeignDependenciesSQL lists, one sentence per row, every dependency that
// an object of the bundle (a function, constraint, column default, index,
// trigger or rule whose table or function lives in schema durable_jobs) has
// on an object of a schema other than pg_catalog and durable_jobs, read
// from pg_depend: an operator, function or type that bound by the
// installer's search_path instead of the system catalog's. It names the
// two objects and the foreign schema, never a value. A correct install
// lists nothing. Any login can run it; it takes no parameters.
const ForeignDependenciesSQL = `WITH bundle_object AS (
    SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass AS classid, p.oid AS objid
    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'durable_jobs'
    UNION ALL
    SELECT 'pg_catalog.pg_constraint'::pg_catalog.regclass, k.oid
    FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_namespace n ON n.oid = k.connamespace
    WHERE n.nspname = 'durable_jobs'
    UNION ALL
    SELECT 'pg_catalog.pg_attrdef'::pg_catalog.regclass, d.oid
    FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_class c ON c.oid = d.adrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'durable_jobs'
    UNION ALL
    SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, c.oid
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'durable_jobs'
    UNION ALL
    SELECT 'pg_catalog.pg_trigger'::pg_catalog.regclass, g.oid
    FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'durable_jobs'
    UNION ALL
    SELECT 'pg_catalog.pg_rewrite'::pg_catalog.regclass, w.oid
    FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_class c ON c.oid = w.ev_class
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'durable_jobs'
    UNION ALL
    SELECT 'pg_catalog.pg_policy'::pg_catalog.regclass, y.oid
    FROM pg_catalog.pg_policy y JOIN pg_catalog.pg_class c ON c.oid = y.polrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'durable_jobs'
)
SELECT DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) || ' depends on ' ||
       pg_catalog.pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) ||
       ' in schema ' || pg_catalog.quote_ident(r.schema)
FROM bundle_object b
JOIN pg_catalog.pg_depend d ON d.classid = b.classid AND d.objid = b.objid
CROSS JOIN LATERAL pg_catalog.pg_identify_object(d.refclassid, d.refobjid, d.refobjsubid) r
WHERE r.schema IS NOT NULL AND r.schema NOT IN ('pg_catalog', 'durable_jobs')
ORDER BY 1`
