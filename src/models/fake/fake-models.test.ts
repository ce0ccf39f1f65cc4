import { describeChatModelContract } from '../chat-model.contract.js';
import { describeEmbeddingModelContract } from '../embedding-model.contract.js';
import { createFakeEmbeddingModel } from './fake-embedding-model.js';
import { createScriptedChatModel } from './scripted-chat-model.js';

describeEmbeddingModelContract('the fake embedding model', {
  makeModel: () => createFakeEmbeddingModel({ dimensions: 32 }),
});

describeChatModelContract('the scripted chat model', {
  makeModel: (reply) => createScriptedChatModel([reply, reply]),
});
