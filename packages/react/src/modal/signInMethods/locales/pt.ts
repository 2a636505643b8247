import type { LinkingMessages } from '../en.js'

const pt: LinkingMessages = {
  signInMethods: 'Métodos de login',
  loadingMethods: 'Carregando métodos de login…',
  signInToManage: 'Entre no app para ver e alterar como você entra.',
  kindEmail: 'E-mail',
  kindPasskey: 'Chave de acesso',
  kindWallet: 'Carteira',
  kindOAuth: 'Conta social',
  linkedOn: 'Vinculado em {date}',
  remove: 'Remover',
  removeMethod: 'Remover {label}',
  onlyMethod: 'Esta é sua única forma de entrar. Adicione outra antes de removê-la.',
  addMethod: 'Adicionar um método de login',
  emailToLink: 'E-mail a adicionar',
  sendCode: 'Enviar código',
  typeCodeInFrame: 'Digite na janela o código enviado para {email}.',
  signInWalletToLink: 'Assine a mensagem em {name}',
  linking: 'Vinculando…',
  methodLinked: '{label} vinculado. Agora você pode entrar com ele.',
  removing: 'Removendo…',
  methodRemoved: '{label} removido.',
  secondFactor: 'Segundo fator',
  mfaOff: 'Nenhum segundo fator configurado.',
  mfaOn: 'Um app autenticador está configurado.',
  setUpTotp: 'Configurar um app autenticador',
  settingUpTotp: 'Configurando o app autenticador…',
  totpEnrolled: 'App autenticador configurado. Guarde seus códigos de recuperação em um lugar seguro.',
  methodsStatus: 'Status dos métodos de login',
}

export default pt
