/* simhash 1.3 -> 1.4: the type simhash is renamed simhash64 */

\echo Use "ALTER EXTENSION simhash UPDATE TO '1.4'" to load this file. \quit

-- PostgreSQL reads name('literal') as a cast when a type has that name, so
-- while the type and the function shared the name simhash,
-- simhash('some words') (what psql users type first, and what psycopg2,
-- Django and Rails send, interpolating parameters as quoted literals) was
-- a cast of the sentence to the type, and failed.  Renaming keeps every
-- stored value, column, index, operator, cast and function (they refer to
-- the type by OID); the array type becomes _simhash64 with it.
ALTER TYPE simhash RENAME TO simhash64;
