-- harness fixture: an SQL error stops the file
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(2);
SELECT ok(true, 'first passes');
SELECT no_such_function_here();
SELECT * FROM finish();
ROLLBACK;
