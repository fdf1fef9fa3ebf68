import { createMemoryEventStore } from '../../src/store/memory-event-store.ts';
import { eventStoreContract } from './event-store-contract.ts';

eventStoreContract('memory', async () => {
  const store = createMemoryEventStore();
  return { store, cleanup: () => store.close() };
});
