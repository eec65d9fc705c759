-- Run once by gvenzl/oracle-free when it creates the database (as SYSDBA, in the root container).
-- APP_USER gets DB_DEVELOPER_ROLE; picoora also loads its ONNX embedding model, which needs this.
ALTER SESSION SET CONTAINER = FREEPDB1;
GRANT CREATE MINING MODEL TO picoora;
