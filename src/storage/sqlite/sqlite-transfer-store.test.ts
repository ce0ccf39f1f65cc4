import { describeTransferStoreContract } from '../transfer-store.contract.js';
import { createSqliteStorage } from './sqlite-storage.js';

describeTransferStoreContract('SQLite :memory:', async () => createSqliteStorage({ path: ':memory:' }));
