# A Megatron-LM launch of Llama 3 70B on 64 H100s (8 nodes), in the style of Megatron-LM's
# examples/llama and the Megatron-Bridge Llama 3 70B recipe: TP 8, PP 4, CP 1, sequence
# parallelism, the distributed optimizer with overlapped reduce-scatter and all-gather.
CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_FWD_LAYERNORM_SM_MARGIN=16 \
torchrun --nproc-per-node 8 --nnodes 8 --node-rank 0 --master-addr node0 --master-port 6000 \
  pretrain_gpt.py \
  --use-mcore-models \
  --num-layers 80 \
  --hidden-size 8192 \
  --ffn-hidden-size 28672 \
  --num-attention-heads 64 \
  --group-query-attention \
  --num-query-groups 8 \
  --swiglu \
  --normalization RMSNorm \
  --disable-bias-linear \
  --position-embedding-type rope \
  --rotary-base 500000 \
  --untie-embeddings-and-output-weights \
  --seq-length 8192 \
  --max-position-embeddings 8192 \
  --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model meta-llama/Meta-Llama-3-70B \
  --vocab-size 128256 \
  --make-vocab-size-divisible-by 128 \
  --tensor-model-parallel-size 8 \
  --pipeline-model-parallel-size 4 \
  --context-parallel-size 1 \
  --sequence-parallel \
  --micro-batch-size 1 \
  --global-batch-size 128 \
  --train-iters 1000 \
  --bf16 \
  --attention-backend flash \
  --recompute-granularity selective \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --tp-comm-overlap \
  --lr 1.5e-4 --min-lr 1.5e-5 --lr-decay-style cosine --lr-warmup-iters 100 \
  --weight-decay 0.1 --clip-grad 1.0 --adam-beta1 0.9 --adam-beta2 0.95 \
  --init-method-std 0.008 \
  --data-path $DATA_PATH \
  --split 99,1,0 \
  --log-interval 10 --eval-interval 1000 --eval-iters 10 \
  --save $CHECKPOINT_DIR --save-interval 500
