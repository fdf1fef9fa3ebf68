import { MemoryChangeBus, MemoryChangePublisher, MemoryChangeTopic } from '#bus/memory-change-bus';
import { changeBusContract } from './change-bus-contract.ts';

changeBusContract('memory', async () => {
  const topic = new MemoryChangeTopic();
  return {
    bus: (log) => new MemoryChangeBus({ topic, log }),
    publisher: () => new MemoryChangePublisher(topic),
    produceRaw: async (messages) => topic.produce(messages),
    cleanup: async () => undefined,
  };
});
