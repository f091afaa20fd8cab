"""Benchmark models built in code (no downloads): a BERT-base encoder from a
transformers config with random weights, and a ResNet-50 (torchvision's
layout: bottleneck blocks 3-4-6-3, 25.6 M parameters)."""
import torch
import torch.nn as nn


def bert_base(**config):
    """BERT-base; keyword arguments override its BertConfig (smaller encoders for tests)."""
    import transformers

    cfg = transformers.BertConfig(**{**dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                            intermediate_size=3072, vocab_size=30522, max_position_embeddings=512),
                                     **config})
    model = transformers.BertModel(cfg, add_pooling_layer=False)

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, ids):
            return self.bert(input_ids=ids).last_hidden_state

    return Wrap()


def bert_inputs(batch=1, seq=128):
    return (torch.randint(0, 30522, (batch, seq)),)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride=1):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + idt)


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for i, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
            stage = []
            for b in range(blocks):
                stage.append(Bottleneck(cin, width, 2 if (b == 0 and i > 0) else 1))
                cin = width * 4
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet_inputs(batch=1, size=224):
    return (torch.randn(batch, 3, size, size),)
