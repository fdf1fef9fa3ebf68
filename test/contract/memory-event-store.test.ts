import { createMemoryEventStore } from '#store/memory-event-store';
import { eventStoreContract } from './event-store-contract.ts';

eventStoreContract('memory', async () => {
  const store = createMemoryEventStore();
  return { store, cleanup: () => store.close() };
});
