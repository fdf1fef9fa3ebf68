/**
 * KafkaChangeBus and KafkaChangePublisher keep the ChangeBus contract on the real broker (`npm run services:up`).
 * Without a broker this file fails when CI=true and is skipped loudly elsewhere (test/int/kafka-helpers.ts).
 */
import { Partitioners } from 'kafkajs';
import { KafkaChangeBus, KafkaChangePublisher } from '#bus/kafka-change-bus';
import { quietKafka, requireServices, uniqueTopic } from '../int/kafka-helpers.ts';
import { changeBusContract } from './change-bus-contract.ts';

const services = await requireServices('ChangeBus contract: kafka');

if (services) {
  const { brokers } = services;
  changeBusContract('kafka', async () => {
    const topic = uniqueTopic('bus-contract');
    return {
      bus: (log) => new KafkaChangeBus({ brokers, topic, log }),
      publisher: () => new KafkaChangePublisher({ brokers, topic }),
      produceRaw: async (messages) => {
        // The publisher's partitioner, so a raw message lands on the partition of the changes sharing its key.
        const producer = quietKafka(brokers).producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
        await producer.connect();
        try {
          await producer.send({ topic, messages });
        } finally {
          await producer.disconnect();
        }
      },
      cleanup: async () => {
        const admin = quietKafka(brokers).admin();
        await admin.connect();
        await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
        await admin.disconnect();
      },
    };
  });
}
